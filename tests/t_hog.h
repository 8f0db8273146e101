/* SPDX-License-Identifier: MIT */
/*
 * A CPU hog inside the test process: threads that spin until stopped, so
 * the test's own thread is preempted (the kernel sets need_resched on it)
 * as on a busy machine, whatever else runs. Shared by every suite.
 */
#ifndef T_HOG_H
#define T_HOG_H

/* Start n spinning threads (at most T_HOG_MAX); t_hog_stop() joins them.
 * 0, or -errno when a thread could not be started (none is left running). */
#define T_HOG_MAX 8
int t_hog_start(unsigned n);
void t_hog_stop(void);

#endif
