/* metrics_mark.h - trial registrations: mr_metrics_mark and
 * mr_metrics_rollback, declared with the registry in api_test.h. */
#ifndef MR_METRICS_METRICS_MARK_H
#define MR_METRICS_METRICS_MARK_H

#include "api_test.h"

#endif
