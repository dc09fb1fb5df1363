/* kube_thread.c - the client's one thread: drives every transfer through
 * one libcurl multi handle (the watches stay open side by side), starts
 * what is due, and sleeps in curl_multi_poll until a socket, a timer of
 * libcurl's or of a stream's backoff, or a caller's wakeup needs it. */
#include "base/log.h"
#include "kube/kube_internal.h"

#define IDLE_MS 1000

static void finish_transfers(struct mr_kube *k)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(k->multi, &left))) {
		struct kube_xfer *x = NULL;

		if (msg->msg != CURLMSG_DONE ||
		    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x) != CURLE_OK || !x)
			continue;
		if (x->get)
			mr_kube_get_done(x->owner, msg->data.result);
		else
			mr_kube_stream_done(x->owner, msg->data.result);
	}
}

static int stopping(struct mr_kube *k)
{
	int stop;

	pthread_mutex_lock(&k->lock);
	stop = k->stopping;
	pthread_mutex_unlock(&k->lock);
	return stop;
}

void *mr_kube_thread_main(void *arg)
{
	struct mr_kube *k = arg;
	int running;

	while (!stopping(k)) {
		CURLMcode rc = curl_multi_perform(k->multi, &running);
		uint64_t wait;

		finish_transfers(k);
		wait = mr_kube_streams_tick(k, mr_kube_now_ms(), IDLE_MS);
		mr_kube_gets_tick(k);
		if (rc == CURLM_OK)
			rc = curl_multi_poll(k->multi, NULL, 0, (int)wait, NULL);
		if (rc != CURLM_OK) {
			mr_log(MR_LEVEL_ERROR, "kube", "the Kubernetes client stops: %s",
			       curl_multi_strerror(rc));
			break;
		}
	}
	return NULL;
}
