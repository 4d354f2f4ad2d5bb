/* runtime/rt_boot.c -- the TCP bootstrap: a star around rank 0 at
 * MASTER_ADDR:MASTER_PORT.  It carries the NCCL unique id out, a few small
 * exchanges at set-up (node ids, IPC handles, clock round trips, traces),
 * and, on a second "control" connection per rank, failure notices so that
 * every rank stops when one does.  Every read, write and connect has a
 * deadline; every failure says who waited for whom, where, and how long.
 *
 * Wire: hello {magic, version, rank, world, kind} (u32, network order);
 * reply {status, msglen, bloblen} + msg + blob; control messages
 * {type, len} + text.  IPv4. */
#include "rt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAGIC = 0x53595254, VERSION = 1, KIND_DATA = 0, KIND_CTL = 1 };
enum { CTL_FAIL = 1, CTL_BYE = 2 };
enum { CTL_IO_MS = 200, CLOCK_ROUNDS = 16, MAX_MSG = 4096 };

struct RtBoot {
	int rank, world, timeout_ms;
	int *fd;  /* rank 0: fd[p], p > 0; others: fd[0] = rank 0 */
	int *cfd; /* control connections, same shape */
	pthread_mutex_t cmu;
	char addr[256];
	int port;
};

static uint64_t
deadline_in(int ms)
{
	return rt_now_ns() + (uint64_t)ms * 1000000u;
}

static int
ms_left(uint64_t deadline)
{
	uint64_t now = rt_now_ns();
	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999u) / 1000000u);
}

static void
nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL, 0);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Move len bytes through fd before the deadline.  0, or -1 with errno
 * (ETIMEDOUT, ECONNRESET for a closed peer, ...). */
static int
io_full(int fd, void *buf, size_t len, int out, uint64_t deadline)
{
	char *p = buf;
	while (len) {
		struct pollfd pf = {fd, (short)(out ? POLLOUT : POLLIN), 0};
		int left = ms_left(deadline), k;
		ssize_t m;
		if (!left) {
			errno = ETIMEDOUT;
			return -1;
		}
		k = poll(&pf, 1, left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (!k)
			continue;
		m = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (m < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			continue;
		if (m < 0)
			return -1;
		if (!m) {
			errno = ECONNRESET;
			return -1;
		}
		p += m;
		len -= (size_t)m;
	}
	return 0;
}

static int
put_u32s(int fd, const uint32_t *v, int n, uint64_t deadline)
{
	uint32_t w[8];
	for (int i = 0; i < n; i++)
		w[i] = htonl(v[i]);
	return io_full(fd, w, (size_t)n * 4, 1, deadline);
}

static int
get_u32s(int fd, uint32_t *v, int n, uint64_t deadline)
{
	if (io_full(fd, v, (size_t)n * 4, 0, deadline))
		return -1;
	for (int i = 0; i < n; i++)
		v[i] = ntohl(v[i]);
	return 0;
}

static const char *
io_why(void)
{
	return errno == ETIMEDOUT ? "timed out" : errno == ECONNRESET ? "connection closed" : strerror(errno);
}

static RtBoot *
boot_new(int rank, int world, int timeout_ms, const char *addr, int port)
{
	RtBoot *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->fd = malloc(sizeof(int) * (size_t)world);
	b->cfd = malloc(sizeof(int) * (size_t)world);
	if (!b->fd || !b->cfd) {
		free(b->fd);
		free(b->cfd);
		free(b);
		return NULL;
	}
	for (int i = 0; i < world; i++)
		b->fd[i] = b->cfd[i] = -1;
	b->rank = rank;
	b->world = world;
	b->timeout_ms = timeout_ms;
	b->port = port;
	rt_fmt(b->addr, sizeof b->addr, "%s", addr);
	pthread_mutex_init(&b->cmu, NULL);
	return b;
}

static void
boot_free(RtBoot *b)
{
	for (int i = 0; i < b->world; i++) {
		if (b->fd[i] >= 0)
			close(b->fd[i]);
		if (b->cfd[i] >= 0)
			close(b->cfd[i]);
	}
	pthread_mutex_destroy(&b->cmu);
	free(b->fd);
	free(b->cfd);
	free(b);
}

/* ---- rank 0 ---- */

static int
listen_on(int port, char *err, size_t n)
{
	struct sockaddr_in sa;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		rt_fmt(err, n, "bootstrap: rank 0 cannot create a socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	sa.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 256)) {
		rt_fmt(err, n, "bootstrap: rank 0 cannot listen on port %d: %s", port, strerror(errno));
		close(fd);
		return -1;
	}
	nonblock(fd);
	return fd;
}

static void
list_missing(const RtBoot *b, char *out, size_t n)
{
	size_t k = 0;
	int shown = 0;
	out[0] = 0;
	for (int p = 1; p < b->world && k + 16 < n; p++) {
		if (b->fd[p] >= 0 && b->cfd[p] >= 0)
			continue;
		if (shown++ == 32) {
			rt_fmt(out + k, n - k, ", ...");
			return;
		}
		k += rt_fmt(out + k, n - k, "%s%d", k ? ", " : "", p);
	}
}

/* Say no to one connection, with the reason, so it fails now rather than
 * at its deadline. */
static void
refuse(int fd, const char *why)
{
	uint32_t len = (uint32_t)strlen(why), h[3] = {1, len, 0};
	if (!put_u32s(fd, h, 3, deadline_in(CTL_IO_MS)))
		io_full(fd, (void *)why, len, 1, deadline_in(CTL_IO_MS));
}

/* One incoming connection: read its hello, check it, file it.  0 fine,
 * 1 not ours (ignored), -1 fatal (err set, the sender told). */
static int
take_hello(RtBoot *b, int fd, uint64_t deadline, char *err, size_t n)
{
	uint32_t h[5];
	int r, w, kind;
	if (get_u32s(fd, h, 5, deadline) || h[0] != MAGIC)
		return 1;
	r = (int)h[2];
	w = (int)h[3];
	kind = h[4] == KIND_CTL ? KIND_CTL : KIND_DATA;
	if (h[1] != VERSION)
		rt_fmt(err, n, "bootstrap: rank %d speaks protocol %u, rank 0 speaks %d (mixed libsyncrt versions)", r,
		       h[1], VERSION);
	else if (w != b->world)
		rt_fmt(err, n, "bootstrap: world size mismatch: rank %d has WORLD_SIZE=%d but rank 0 has WORLD_SIZE=%d",
		       r, w, b->world);
	else if (r <= 0 || r >= b->world)
		rt_fmt(err, n, "bootstrap: a process says it is rank %d, out of range for WORLD_SIZE=%d", r, b->world);
	else if ((kind == KIND_DATA ? b->fd : b->cfd)[r] >= 0)
		rt_fmt(err, n, "bootstrap: two processes say they are rank %d (check RANK of every process)", r);
	else {
		(kind == KIND_DATA ? b->fd : b->cfd)[r] = fd;
		return 0;
	}
	if (kind == KIND_DATA)
		refuse(fd, err);
	close(fd);
	return -1;
}

/* Tell every connected rank why the bootstrap stopped, so nobody waits
 * out its own deadline for nothing. */
static void
refuse_all(RtBoot *b, const char *why)
{
	for (int p = 1; p < b->world; p++)
		if (b->fd[p] >= 0)
			refuse(b->fd[p], why);
}

static int
accept_all(RtBoot *b, int lfd, uint64_t deadline, char *err, size_t n)
{
	int need = 2 * (b->world - 1), have = 0;
	while (have < need) {
		struct pollfd pf = {lfd, POLLIN, 0};
		int left = ms_left(deadline), fd, k;
		if (!left) {
			char miss[256];
			list_missing(b, miss, sizeof miss);
			rt_fmt(err, n,
			       "bootstrap: rank 0 waited %d ms on port %d for WORLD_SIZE=%d ranks; never heard from "
			       "rank %s",
			       b->timeout_ms, b->port, b->world, miss);
			return -1;
		}
		k = poll(&pf, 1, left);
		if (k <= 0)
			continue;
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		nonblock(fd);
		k = take_hello(b, fd, deadline, err, n);
		if (k < 0)
			return -1;
		if (k > 0) {
			close(fd);
			continue;
		}
		have++;
	}
	return 0;
}

static int
boot_root(RtBoot *b, void *blob, size_t bloblen, char *err, size_t n)
{
	uint64_t deadline = deadline_in(b->timeout_ms);
	int lfd = listen_on(b->port, err, n);
	if (lfd < 0)
		return SYN_EBOOT;
	if (accept_all(b, lfd, deadline, err, n)) {
		close(lfd);
		refuse_all(b, err);
		return SYN_EBOOT;
	}
	close(lfd);
	for (int p = 1; p < b->world; p++) {
		uint32_t h[3] = {0, 0, (uint32_t)bloblen};
		if (put_u32s(b->fd[p], h, 3, deadline) || io_full(b->fd[p], blob, bloblen, 1, deadline)) {
			rt_fmt(err, n, "bootstrap: rank 0 could not send the NCCL id to rank %d: %s", p, io_why());
			return SYN_EBOOT;
		}
	}
	return SYN_OK;
}

/* ---- the other ranks ---- */

static int
resolve(const char *addr, int port, struct sockaddr_in *sa, char *err, size_t n, int rank)
{
	struct addrinfo hint, *res = NULL;
	char ps[16];
	int k;
	memset(&hint, 0, sizeof hint);
	hint.ai_family = AF_INET;
	hint.ai_socktype = SOCK_STREAM;
	rt_fmt(ps, sizeof ps, "%d", port);
	k = getaddrinfo(addr, ps, &hint, &res);
	if (k || !res) {
		rt_fmt(err, n, "bootstrap: rank %d cannot resolve MASTER_ADDR=%s: %s", rank, addr, gai_strerror(k));
		return -1;
	}
	memcpy(sa, res->ai_addr, sizeof *sa);
	freeaddrinfo(res);
	return 0;
}

/* Rank 0 has already answered on the data connection: that can only be a
 * refusal (it answers yes once everybody is in), so stop retrying. */
static int
refused(const RtBoot *b)
{
	struct pollfd pf = {b->fd[0], POLLIN, 0};
	return b->fd[0] >= 0 && poll(&pf, 1, 0) > 0;
}

/* Connect, retrying while rank 0 is not listening yet.  -1 failed (err
 * set), -2 rank 0 refused us meanwhile. */
static int
connect_retry(RtBoot *b, const struct sockaddr_in *sa, uint64_t deadline, char *err, size_t n)
{
	const char *why = "timed out";
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), k, e = 0, one = 1;
		socklen_t el = sizeof e;
		struct pollfd pf;
		if (fd < 0) {
			rt_fmt(err, n, "bootstrap: rank %d cannot create a socket: %s", b->rank, strerror(errno));
			return -1;
		}
		nonblock(fd);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		k = connect(fd, (const struct sockaddr *)sa, sizeof *sa);
		if (k && errno == EINPROGRESS) {
			pf.fd = fd;
			pf.events = POLLOUT;
			pf.revents = 0;
			k = poll(&pf, 1, ms_left(deadline) ? ms_left(deadline) : 1);
			if (k > 0 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) && !e)
				return fd;
			why = k > 0 ? strerror(e) : "timed out";
		} else if (!k) {
			return fd;
		} else {
			why = strerror(errno);
		}
		close(fd);
		if (refused(b))
			return -2;
		if (!ms_left(deadline)) {
			rt_fmt(err, n, "bootstrap: rank %d could not reach rank 0 at %s:%d within %d ms: %s", b->rank,
			       b->addr, b->port, b->timeout_ms, why);
			return -1;
		}
		{
			struct timespec ts = {0, 20 * 1000000};
			nanosleep(&ts, NULL);
		}
	}
}

static int
hello(RtBoot *b, const struct sockaddr_in *sa, int kind, uint64_t deadline, char *err, size_t n)
{
	uint32_t h[5] = {MAGIC, VERSION, (uint32_t)b->rank, (uint32_t)b->world, (uint32_t)kind};
	int fd = connect_retry(b, sa, deadline, err, n);
	if (fd < 0)
		return fd;
	if (put_u32s(fd, h, 5, deadline)) {
		rt_fmt(err, n, "bootstrap: rank %d could not greet rank 0 at %s:%d: %s", b->rank, b->addr, b->port,
		       io_why());
		close(fd);
		return -1;
	}
	return fd;
}

static int
read_reply(RtBoot *b, void *blob, size_t bloblen, uint64_t deadline, char *err, size_t n)
{
	uint32_t h[3];
	char msg[MAX_MSG];
	if (get_u32s(b->fd[0], h, 3, deadline)) {
		if (errno == ETIMEDOUT)
			rt_fmt(err, n,
			       "bootstrap: rank %d reached rank 0 at %s:%d but got no answer within %d ms (rank 0 is "
			       "still waiting for other ranks)",
			       b->rank, b->addr, b->port, b->timeout_ms);
		else
			rt_fmt(err, n, "bootstrap: rank %d lost rank 0 at %s:%d: %s", b->rank, b->addr, b->port,
			       io_why());
		return SYN_EBOOT;
	}
	if (h[0]) {
		size_t k = h[1] < sizeof msg - 1 ? h[1] : sizeof msg - 1;
		if (io_full(b->fd[0], msg, k, 0, deadline_in(CTL_IO_MS)))
			k = 0;
		msg[k] = 0;
		rt_fmt(err, n, "bootstrap: rank 0 at %s:%d refused rank %d: %s", b->addr, b->port, b->rank,
		       k ? msg : "(no reason given)");
		return SYN_EBOOT;
	}
	if (h[2] != bloblen || io_full(b->fd[0], blob, bloblen, 0, deadline)) {
		rt_fmt(err, n, "bootstrap: rank %d got a malformed NCCL id from rank 0 (%u bytes, expected %zu)",
		       b->rank, h[2], bloblen);
		return SYN_EBOOT;
	}
	return SYN_OK;
}

static int
boot_peer(RtBoot *b, void *blob, size_t bloblen, char *err, size_t n)
{
	uint64_t deadline = deadline_in(b->timeout_ms);
	struct sockaddr_in sa;
	if (resolve(b->addr, b->port, &sa, err, n, b->rank))
		return SYN_EBOOT;
	if ((b->fd[0] = hello(b, &sa, KIND_DATA, deadline, err, n)) < 0)
		return SYN_EBOOT;
	if ((b->cfd[0] = hello(b, &sa, KIND_CTL, deadline, err, n)) == -1)
		return SYN_EBOOT;
	return read_reply(b, blob, bloblen, deadline, err, n);
}

int
rt_boot_open(RtBoot **out, const char *addr, int port, int rank, int world, int timeout_ms, void *blob,
             size_t bloblen, char *err, size_t n)
{
	RtBoot *b;
	int r;
	*out = NULL;
	if (world < 2 || rank < 0 || rank >= world || world > RT_MAX_RANKS) {
		rt_fmt(err, n, "bootstrap: rank %d of %d makes no sense", rank, world);
		return SYN_EARG;
	}
	if (!(b = boot_new(rank, world, timeout_ms, addr ? addr : "", port))) {
		rt_fmt(err, n, "bootstrap: out of memory");
		return SYN_ENOMEM;
	}
	r = rank == 0 ? boot_root(b, blob, bloblen, err, n) : boot_peer(b, blob, bloblen, err, n);
	if (r) {
		boot_free(b);
		return r;
	}
	*out = b;
	return SYN_OK;
}

void
rt_boot_close(RtBoot *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->cmu);
	for (int p = 0; p < b->world; p++) {
		uint32_t h[2] = {CTL_BYE, 0};
		if (b->cfd[p] >= 0)
			put_u32s(b->cfd[p], h, 2, deadline_in(CTL_IO_MS));
	}
	pthread_mutex_unlock(&b->cmu);
	boot_free(b);
}

/* ---- exchanges on the data connections ---- */

static int
xfail(const RtBoot *b, int p, const char *what, char *err, size_t n)
{
	rt_fmt(err, n, "bootstrap: rank %d: %s with rank %d failed: %s", b->rank, what, p, io_why());
	return SYN_EBOOT;
}

int
rt_boot_allgather(RtBoot *b, const void *mine, size_t len, void *all, char *err, size_t n)
{
	uint64_t deadline = deadline_in(b->timeout_ms);
	char *a = all;
	if (b->rank) {
		if (io_full(b->fd[0], (void *)mine, len, 1, deadline) ||
		    io_full(b->fd[0], all, len * (size_t)b->world, 0, deadline))
			return xfail(b, 0, "allgather", err, n);
		return SYN_OK;
	}
	memcpy(a, mine, len);
	for (int p = 1; p < b->world; p++)
		if (io_full(b->fd[p], a + len * (size_t)p, len, 0, deadline))
			return xfail(b, p, "allgather", err, n);
	for (int p = 1; p < b->world; p++)
		if (io_full(b->fd[p], all, len * (size_t)b->world, 1, deadline))
			return xfail(b, p, "allgather", err, n);
	return SYN_OK;
}

/* Rank 0 gets every rank's bytes (all[p], malloc'd, lens[p]); the others
 * only send. */
int
rt_boot_gatherv(RtBoot *b, const void *mine, size_t len, char **all, size_t *lens, char *err, size_t n)
{
	uint64_t deadline = deadline_in(b->timeout_ms);
	if (b->rank) {
		uint64_t l = len;
		if (io_full(b->fd[0], &l, 8, 1, deadline) || io_full(b->fd[0], (void *)mine, len, 1, deadline))
			return xfail(b, 0, "gather", err, n);
		return SYN_OK;
	}
	for (int p = 0; p < b->world; p++) {
		uint64_t l = len;
		all[p] = NULL;
		lens[p] = 0;
		if (p && io_full(b->fd[p], &l, 8, 0, deadline))
			return xfail(b, p, "gather", err, n);
		if (!(all[p] = malloc(l ? l : 1))) {
			rt_fmt(err, n, "bootstrap: out of memory gathering %llu bytes", (unsigned long long)l);
			return SYN_ENOMEM;
		}
		lens[p] = l;
		if (!p)
			memcpy(all[p], mine, len);
		else if (io_full(b->fd[p], all[p], l, 0, deadline))
			return xfail(b, p, "gather", err, n);
	}
	return SYN_OK;
}

/* Round trips to rank 0: offset_ns is rank 0's CLOCK_MONOTONIC minus ours,
 * from the round trip with the smallest rtt (error <= rtt / 2).  Rank 0
 * answers every rank in turn. */
int
rt_boot_clock(RtBoot *b, int64_t *offset_ns, int64_t *rtt_ns, char *err, size_t n)
{
	uint64_t deadline = deadline_in(b->timeout_ms);
	*offset_ns = 0;
	*rtt_ns = 0;
	if (!b->rank) {
		for (int p = 1; p < b->world; p++)
			for (int i = 0; i < CLOCK_ROUNDS; i++) {
				char c;
				uint64_t t;
				if (io_full(b->fd[p], &c, 1, 0, deadline))
					return xfail(b, p, "clock round trip", err, n);
				t = rt_now_ns();
				if (io_full(b->fd[p], &t, 8, 1, deadline))
					return xfail(b, p, "clock round trip", err, n);
			}
		return SYN_OK;
	}
	*rtt_ns = INT64_MAX;
	for (int i = 0; i < CLOCK_ROUNDS; i++) {
		char c = 'p';
		uint64_t t0 = rt_now_ns(), t1, t2;
		if (io_full(b->fd[0], &c, 1, 1, deadline) || io_full(b->fd[0], &t1, 8, 0, deadline))
			return xfail(b, 0, "clock round trip", err, n);
		t2 = rt_now_ns();
		if ((int64_t)(t2 - t0) < *rtt_ns) {
			*rtt_ns = (int64_t)(t2 - t0);
			*offset_ns = (int64_t)t1 - (int64_t)(t0 + (t2 - t0) / 2);
		}
	}
	return SYN_OK;
}

/* ---- failure notices on the control connections ---- */

static void
ctl_send(int fd, uint32_t type, const char *msg)
{
	uint32_t len = msg ? (uint32_t)strlen(msg) : 0, h[2] = {type, len};
	if (fd < 0)
		return;
	if (!put_u32s(fd, h, 2, deadline_in(CTL_IO_MS)) && len)
		io_full(fd, (void *)msg, len, 1, deadline_in(CTL_IO_MS));
}

void
rt_boot_notify(RtBoot *b, const char *msg)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->cmu);
	for (int p = 0; p < b->world; p++)
		ctl_send(b->cfd[p], CTL_FAIL, msg);
	pthread_mutex_unlock(&b->cmu);
}

/* Read one control message from cfd[p]: 1 a failure (msg), 0 a goodbye. */
static int
ctl_read(RtBoot *b, int p, char *msg, size_t n)
{
	uint32_t h[2];
	char text[MAX_MSG];
	size_t k;
	if (get_u32s(b->cfd[p], h, 2, deadline_in(CTL_IO_MS))) {
		rt_fmt(msg, n, "rank %d's process went away without a word (crashed or killed?)", b->rank ? 0 : p);
		close(b->cfd[p]);
		b->cfd[p] = -1;
		return 1;
	}
	if (h[0] == CTL_BYE) {
		close(b->cfd[p]);
		b->cfd[p] = -1;
		return 0;
	}
	k = h[1] < sizeof text - 1 ? h[1] : sizeof text - 1;
	if (io_full(b->cfd[p], text, k, 0, deadline_in(CTL_IO_MS)))
		k = 0;
	text[k] = 0;
	rt_fmt(msg, n, "%s", text);
	return 1;
}

int
rt_boot_poll(RtBoot *b, char *msg, size_t n)
{
	int got = 0;
	if (!b)
		return 0;
	pthread_mutex_lock(&b->cmu);
	for (int p = 0; p < b->world && !got; p++) {
		struct pollfd pf = {b->cfd[p], POLLIN, 0};
		if (b->cfd[p] < 0 || poll(&pf, 1, 0) <= 0)
			continue;
		if (!ctl_read(b, p, msg, n))
			continue;
		got = 1;
		/* rank 0 is the hub: pass it on to everybody else */
		for (int q = 1; q < b->world && !b->rank; q++)
			if (q != p)
				ctl_send(b->cfd[q], CTL_FAIL, msg);
	}
	pthread_mutex_unlock(&b->cmu);
	return got;
}
