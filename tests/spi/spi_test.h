// SPDX-License-Identifier: MIT
/* What the SPI's C++ tests share: checks that exit 1, and the two-process harness (the
 * server forked, its listening port sent back over a pipe whose ends both sides keep). */
#ifndef ND_SPI_TEST_H
#define ND_SPI_TEST_H

#include <ndspi/ndsupport.h>
#include <ndspi/tchar.h>

#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK_HR(e, want) do { HRESULT hr_ = (e); if (hr_ != (HRESULT)(want)) { \
    fprintf(stderr, "%s:%d: %s = %08x\n", __FILE__, __LINE__, #e, (unsigned)hr_); exit(1); } } while (0)

/* @server(local, write end) sends its port first; @client(server's address, read end). */
static inline void spi_run_pair(void (*server)(const sockaddr_in &, int), void (*client)(const sockaddr_in &, int))
{
    WSADATA wsa;
    CHECK(WSAStartup(MAKEWORD(2, 2), &wsa) == 0);
    CHECK_HR(NdStartup(), ND_SUCCESS);
    sockaddr_in addr;
    INT alen = sizeof(addr);
    WCHAR lo[] = L"127.0.0.1";
    CHECK(WSAStringToAddress(lo, AF_INET, nullptr, reinterpret_cast<sockaddr *>(&addr), &alen) == 0);

    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(pipefd[0]);
        server(addr, pipefd[1]);
        _exit(0);
    }
    close(pipefd[1]);
    CHECK(read(pipefd[0], &addr.sin_port, sizeof(addr.sin_port)) == sizeof(addr.sin_port));
    client(addr, pipefd[0]);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_HR(NdCleanup(), ND_SUCCESS);
}

#endif
