/* SPDX-License-Identifier: MIT */
/*
 * Method "threads": the naive alternative, a fixed pool of N = depth threads
 * doing blocking pread/pwrite on the buffered file, fed through one
 * mutex-protected FIFO and reporting through another. Every request is
 * handed to a thread, hit or miss.
 *
 * Locks: q_lock guards q_*, quit; d_lock guards d_*, reaper_waiting. Never
 * both at once.
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

struct st {
	unsigned nthreads, cap;
	pthread_t *tids;

	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	struct bench_slot **q;          /* ring of cap */
	unsigned q_head, q_len;
	bool quit;

	pthread_mutex_t d_lock;
	pthread_cond_t d_cond;
	struct bench_slot **d;          /* completed, not reaped */
	unsigned d_len;
	bool reaper_waiting;

	struct bench_fds files;         /* set before the workers start */
};

static void *worker(void *arg)
{
	struct st *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->q_lock);
		while (!s->q_len && !s->quit)
			pthread_cond_wait(&s->q_cond, &s->q_lock);
		if (!s->q_len) {
			pthread_mutex_unlock(&s->q_lock);
			return NULL;
		}
		struct bench_slot *sl = s->q[s->q_head];
		s->q_head = (s->q_head + 1) % s->cap;
		s->q_len--;
		pthread_mutex_unlock(&s->q_lock);

		bench_slot_pio(s->files.fd[sl->file], sl);

		pthread_mutex_lock(&s->d_lock);
		s->d[s->d_len++] = sl;
		if (s->reaper_waiting)
			pthread_cond_signal(&s->d_cond);
		pthread_mutex_unlock(&s->d_lock);
	}
}

static void t_teardown(void *state);

static int t_setup(const struct bench_job *job, void **out)
{
	struct st *s = calloc(1, sizeof(*s));
	sigset_t all, old;
	if (!s)
		return -ENOMEM;
	s->cap = job->depth;
	s->q = calloc(s->cap, sizeof(*s->q));
	s->d = calloc(s->cap, sizeof(*s->d));
	s->tids = calloc(job->depth, sizeof(*s->tids));
	pthread_mutex_init(&s->q_lock, NULL);
	pthread_mutex_init(&s->d_lock, NULL);
	pthread_cond_init(&s->q_cond, NULL);
	pthread_cond_init(&s->d_cond, NULL);
	int e = s->q && s->d && s->tids ? bench_fds_open(&s->files, job) : -ENOMEM;
	/* Signals belong to the driver's thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	while (!e && s->nthreads < job->depth) {
		e = -pthread_create(&s->tids[s->nthreads], NULL, worker, s);
		if (!e)
			s->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return bench_setup_end(e, s, t_teardown, out);
}

static int t_submit(void *state, struct bench_slot **v, unsigned n)
{
	struct st *s = state;
	pthread_mutex_lock(&s->q_lock);
	for (unsigned i = 0; i < n; i++) {
		s->q[(s->q_head + s->q_len) % s->cap] = v[i];
		s->q_len++;
		pthread_cond_signal(&s->q_cond);
	}
	pthread_mutex_unlock(&s->q_lock);
	return (int)n;
}

static int t_reap(void *state, unsigned min, unsigned max, struct bench_slot **done)
{
	struct st *s = state;
	pthread_mutex_lock(&s->d_lock);
	while (s->d_len < min) {
		s->reaper_waiting = true;
		pthread_cond_wait(&s->d_cond, &s->d_lock);
	}
	s->reaper_waiting = false;
	unsigned k = s->d_len < max ? s->d_len : max;
	for (unsigned i = 0; i < k; i++)
		done[i] = s->d[--s->d_len];
	pthread_mutex_unlock(&s->d_lock);
	return (int)k;
}

static void t_teardown(void *state)
{
	struct st *s = state;
	pthread_mutex_lock(&s->q_lock);
	s->quit = true;
	pthread_cond_broadcast(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
	for (unsigned i = 0; i < s->nthreads; i++)
		pthread_join(s->tids[i], NULL);
	bench_fds_close(&s->files);
	pthread_mutex_destroy(&s->q_lock);
	pthread_mutex_destroy(&s->d_lock);
	pthread_cond_destroy(&s->q_cond);
	pthread_cond_destroy(&s->d_cond);
	free(s->q);
	free(s->d);
	free(s->tids);
	free(s);
}

const struct bench_path bench_path_threads = {
	.setup = t_setup,
	.submit = t_submit, .reap = t_reap, .teardown = t_teardown,
};
