/* pprof_writer.c - mr_pprof_write: a profile as gzipped pprof, which
 * `go tool pprof` reads, into an output file. The message is streamed
 * straight into the compressor, never held packed in memory. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api_test.h"
#include "base/log.h"
#include "files/output_file.h"
#include "pprof/pprof_gzip.h"
#include "pprof/pprof_message.h"

/* A protobuf-c output buffer that feeds a gzip file. */
struct gzip_sink {
	ProtobufCBuffer base; /* first, so that a ProtobufCBuffer * is a gzip_sink * */
	struct mr_pprof_gzip *file;
};

static void sink_append(ProtobufCBuffer *buffer, size_t len, const uint8_t *data)
{
	struct gzip_sink *sink = (struct gzip_sink *)buffer;

	mr_pprof_gzip_write(sink->file, data, len);
}

static int64_t wall_clock_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int write_message(const Pprof__Profile *profile, mr_output *out)
{
	struct mr_pprof_gzip file;
	struct gzip_sink sink = { .base = { .append = sink_append }, .file = &file };
	int rc = mr_pprof_gzip_open(&file, out);

	if (rc)
		return rc;
	pprof__profile__pack_to_buffer(profile, &sink.base);
	return mr_pprof_gzip_close(&file);
}

int mr_pprof_write(const mr_profile *p, mr_output *out, int32_t off_cpu, uint64_t period_ns,
		   uint64_t duration_ns, const char *main_file, char *err, size_t errlen)
{
	struct mr_pprof_options opts = {
		.off_cpu = off_cpu,
		.period_ns = period_ns,
		.duration_ns = duration_ns,
		.time_ns = wall_clock_ns(),
		.main_file = main_file,
	};
	struct mr_pprof_message msg;
	int rc;

	if (!p || !out)
		return mr_error(err, errlen, -EINVAL, "writing pprof: no profile or no output file");
	rc = mr_pprof_message_build(&msg, p, &opts);
	if (!rc)
		rc = write_message(&msg.profile, out);
	mr_pprof_message_free(&msg);
	if (rc && rc == mr_output_failed(out, NULL, 0))
		return mr_output_failed(out, err, errlen);
	if (rc)
		return mr_error(err, errlen, rc, "writing pprof: %s", strerror(-rc));
	return 0;
}
