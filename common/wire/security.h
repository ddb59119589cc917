/*
 * Who may join: CURVE keys and the ZAP allow-list.
 *
 * Key files (written by `nq keygen NAME`):
 *   NAME.key  mode 0600: two lines "public = <Z85>" and "secret = <Z85>"
 *   NAME.pub  one line: the Z85 public key
 * An allow-list (--authorized-keys for workers, --control-keys for clients)
 * is a file of Z85 public keys, one per line ('#' comments), or a folder of
 * *.pub files. Each endpoint has its own ZAP domain and its own list.
 *
 * CURVE alone admits ANY client key pair; the ZAP handler started here is
 * what restricts the broker to the listed keys.
 */
#ifndef NQ_SECURITY_H
#define NQ_SECURITY_H

#include <stddef.h>
#include <zmq.h>

/* loopback tcp, ipc or inproc: safe without keys. */
int security_endpoint_is_local(const char *endpoint);

/* Reads a key file: a .key file (public and secret) or a .pub file (public only). */
int security_load_key(const char *path, char pub[41], char sec[41], char *err, size_t errlen);
/* Writes NAME.key (0600) and NAME.pub; refuses to overwrite. */
int security_keygen(const char *name, char *err, size_t errlen);

#define SECURITY_ZAP_WORKERS "nq"          /* the workers' endpoint: --authorized-keys */
#define SECURITY_ZAP_CONTROL "nq-control"  /* the control endpoint: --control-keys */

/* Server side: CURVE with the broker's secret key, in ZAP domain `domain` (one of the above). */
int security_server_setup(void *sock, const char *key_file, const char *domain, char *err, size_t errlen);
/* Client side (worker or nq client): own key pair + the broker's public key. */
int security_client_setup(void *sock, const char *key_file, const char *broker_key_file, char *err, size_t errlen);

/* Starts/stops the ZAP handler thread for ctx; the allow-lists are loaded once at start. control
   (NULL: no client may connect with a key) must share no key with authorized. */
int security_zap_start(void *ctx, const char *authorized, const char *control, char *err, size_t errlen);
void security_zap_stop(void *ctx);

/* The Z85 public key that authenticated this message ("" when keys are off). */
void security_msg_key(zmq_msg_t *msg, char *out, size_t outlen);

/*
 * Watches a connecting socket's handshake: returns a monitor to poll with
 * security_monitor_check, which gives 1 and a reason once the peer refused us
 * (wrong broker key, key not allowed, keys on one side only), 0 otherwise. A
 * client also fails at once when nothing accepts its connection (a worker
 * waits for its broker, which may start later).
 */
#define SECURITY_ROLE_WORKER 0
#define SECURITY_ROLE_CLIENT 1
void *security_monitor_new(void *ctx, void *sock, int role);
int security_monitor_check(void *mon, char *why, size_t whylen);
void security_monitor_destroy(void **mon);

#endif
