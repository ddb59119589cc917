/* The default control endpoint of a DB (control_ep.h): one per DB, the same whichever way the DB
   is named, a unix socket path that fits, and a listener seen (or not) at once. */
#include "control_ep.h"
#include "t.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

static void ep_of(const char *db, char *out, size_t len)
{
    char err[256] = "";
    int rc = control_ep_for_db(db, out, len, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "control_ep_for_db(%s): %s\n", db, err);
    T_CHECK(rc == 0);
}

static void in_tmp_dir(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/nq-ctlep-XXXXXX");
    T_CHECK(mkdtemp(dir) != NULL);
    T_CHECK(chdir(dir) == 0);
}

static void rm_tmp_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    T_CHECK(chdir("/") == 0 && system(cmd) == 0);
}

T_TEST(one_endpoint_whichever_way_the_db_is_named)
{
    char dir[64], a[256], b[256], c[256], d[256], want[PATH_MAX + 32];
    in_tmp_dir(dir, sizeof dir);
    T_CHECK(mkdir("sub", 0700) == 0);
    ep_of("nq.db", a, sizeof a);
    ep_of("./nq.db", b, sizeof b);
    ep_of("sub/../nq.db", c, sizeof c);
    snprintf(want, sizeof want, "%s/nq.db", dir);
    ep_of(want, d, sizeof d);
    char real[PATH_MAX];
    T_CHECK(realpath(dir, real) != NULL);
    snprintf(want, sizeof want, "ipc://%s/nq.db.ctl", real);
    T_EQ_STR(a, want);
    T_EQ_STR(b, want);
    T_EQ_STR(c, want);
    T_EQ_STR(d, want);
    ep_of("other.db", b, sizeof b);
    T_CHECK(strcmp(a, b) != 0);
    rm_tmp_dir(dir);
}

T_TEST(a_path_too_long_for_a_unix_socket_gets_a_short_hashed_one)
{
    char dir[64], ep[256], ep2[256], name[200];
    in_tmp_dir(dir, sizeof dir);
    memset(name, 'x', 120);
    name[120] = 0;
    T_CHECK(mkdir(name, 0700) == 0);
    setenv("XDG_RUNTIME_DIR", dir, 1);
    char db[256];
    snprintf(db, sizeof db, "%s/nq.db", name);
    ep_of(db, ep, sizeof ep);
    struct sockaddr_un sa;
    T_CHECK(strlen(ep) - strlen("ipc://") < sizeof sa.sun_path);
    T_CHECK(strncmp(ep + 6, dir, strlen(dir)) == 0);
    snprintf(db, sizeof db, "%s/other.db", name);
    ep_of(db, ep2, sizeof ep2);
    T_CHECK(strcmp(ep, ep2) != 0);
    rm_tmp_dir(dir);
}

T_TEST(a_missing_folder_is_an_error)
{
    char ep[256], err[256] = "";
    T_CHECK(control_ep_for_db("/nonexistent-nq-dir/x/nq.db", ep, sizeof ep, err, sizeof err) == -1);
    T_CHECK(strstr(err, "does not exist") != NULL);
}

T_TEST(listens_sees_a_bound_socket_and_a_dead_one)
{
    char dir[64], ep[256];
    in_tmp_dir(dir, sizeof dir);
    ep_of("nq.db", ep, sizeof ep);
    T_CHECK(control_ep_listens(ep) == 0);          /* no file */
    T_CHECK(control_ep_listens("tcp://127.0.0.1:1") == -1);
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_ROUTER);
    T_CHECK(zmq_bind(s, ep) == 0);
    T_CHECK(control_ep_listens(ep) == 1);
    zmq_close(s);
    zmq_ctx_term(ctx);
    if (access(ep + 6, F_OK) != 0) {                /* libzmq removed it: make a dead one */
        void *ctx2 = zmq_ctx_new(), *s2 = zmq_socket(ctx2, ZMQ_ROUTER);
        T_CHECK(zmq_bind(s2, ep) == 0);
        zmq_close(s2);
        zmq_ctx_term(ctx2);
    }
    T_CHECK(access(ep + 6, F_OK) == 0);            /* a file with no listener: refused */
    T_CHECK(control_ep_listens(ep) == 0);
    rm_tmp_dir(dir);
}

T_RUN_ALL()
