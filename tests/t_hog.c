/* SPDX-License-Identifier: MIT */
/* The in-process CPU hog of the tests (t_hog.h). */
#include "t_hog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

static atomic_bool spinning;          /* the hog threads run while set */
static pthread_t threads[T_HOG_MAX];  /* touched only by the test's thread */
static unsigned running;

static void *spin(void *arg)
{
	volatile uint64_t n = 0;

	(void)arg;
	while (atomic_load_explicit(&spinning, memory_order_relaxed))
		n = n + 1;
	return NULL;
}

int t_hog_start(unsigned n)
{
	if (n > T_HOG_MAX)
		n = T_HOG_MAX;
	atomic_store(&spinning, true);
	for (running = 0; running < n; running++) {
		int err = pthread_create(&threads[running], NULL, spin, NULL);

		if (err) {
			t_hog_stop();
			return -err;
		}
	}
	return 0;
}

void t_hog_stop(void)
{
	atomic_store(&spinning, false);
	while (running)
		pthread_join(threads[--running], NULL);
}
