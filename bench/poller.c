/* poller PORT TIMEOUT_MS LOGFILE CMD...: fork+exec CMD in its own session,
 * poll GET /health on 127.0.0.1:PORT every 1 ms until 200 "ok", print the
 * elapsed milliseconds, then kill the session. Exit 0 only when ready.
 * POLLER_PATH, POLLER_AUTH (a whole header line) and POLLER_EXPECT change the
 * request and the body looked for (the Postiz rows: the API GET with a key). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char req[2048];
static const char *expect = "ok";

static int probe(int port) {
    struct timeval tv = {2, 0};
    struct sockaddr_in a;
    char buf[16384];
    size_t n = 0;
    ssize_t r;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { close(fd); return 0; }
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) { close(fd); return 0; }
    while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) {
        char *body;
        n += (size_t)r;
        buf[n] = 0;
        body = strstr(buf, "\r\n\r\n");
        if (body && n > 12 && strncmp(buf, "HTTP/1.", 7) == 0 &&
            strncmp(buf + 9, "200", 3) == 0 && strstr(body + 4, expect)) {
            close(fd);
            return 1;
        }
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    struct timespec one_ms = {0, 1000000};
    double t0, t1 = 0, tmo, d;
    int port, ok = 0, status, fd;
    pid_t pid;
    if (argc < 5) {
        fprintf(stderr, "usage: poller PORT TIMEOUT_MS LOGFILE CMD...\n");
        return 2;
    }
    port = atoi(argv[1]);
    tmo = atof(argv[2]);
    {
        const char *path = getenv("POLLER_PATH"), *auth = getenv("POLLER_AUTH");
        if (getenv("POLLER_EXPECT")) expect = getenv("POLLER_EXPECT");
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%sConnection: close\r\n\r\n",
                 path ? path : "/health", auth ? auth : "", auth ? "\r\n" : "");
    }
    signal(SIGPIPE, SIG_IGN);
    t0 = now_ms();
    pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
        setsid();
        fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
        fd = open("/dev/null", O_RDONLY);
        if (fd >= 0) { dup2(fd, 0); close(fd); }
        execvp(argv[4], argv + 4);
        _exit(127);
    }
    for (;;) {
        if (probe(port)) { t1 = now_ms(); ok = 1; break; }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "poller: server exited before it was ready\n");
            kill(-pid, SIGKILL);
            return 1;
        }
        if (now_ms() - t0 > tmo) { fprintf(stderr, "poller: timed out\n"); break; }
        nanosleep(&one_ms, NULL);
    }
    kill(-pid, SIGTERM);
    d = now_ms();
    while (waitpid(pid, &status, WNOHANG) == 0 && now_ms() - d < 5000)
        nanosleep(&one_ms, NULL);
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (ok) printf("%.2f\n", t1 - t0);
    return ok ? 0 : 1;
}
