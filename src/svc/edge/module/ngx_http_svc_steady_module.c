/*
 * The upstream of the worker runtime's steady sockets (docs/workers.md "How it runs"): one
 * upstream block whose peer is, per request, the unix socket of the project's slot:
 *
 *     upstream svc_steady {
 *         svc_steady /tmp/svc-sockets-<hash>/slots;   # the slots' directory
 *         keepalive 1024;                            # after it: it wraps this balancer
 *     }
 *
 * The slot is $svc_slot (the routes module's: the routing table's entry names it), the socket
 * <directory>/<slot>.sock. Why not an upstream block per slot: nginx finds the upstream of a
 * `proxy_pass http://$variable` by name in a list, one string compare per block, which cost the
 * 500th project's requests ~8 us more than the first's. The keepalive module keeps connections
 * per peer address, so each socket keeps its own.
 *
 * One try per request, and another after a kept-alive connection its peer had closed (nginx's
 * own rule for a cached connection): never a different socket, which would be another project.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <sys/un.h>

/* A slot is a number: "0" to "999999". */
#define SVC_SLOT_DIGITS 6

typedef struct {
    ngx_str_t   dir;
    ngx_int_t   slot_index;
} ngx_http_svc_steady_srv_conf_t;

typedef struct {
    struct sockaddr_un  addr;
    ngx_str_t           name;
} ngx_http_svc_steady_peer_t;

static ngx_str_t  svc_slot_var = ngx_string("svc_slot");

static char *ngx_http_svc_steady(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static void *ngx_http_svc_steady_create_conf(ngx_conf_t *cf);
static ngx_int_t ngx_http_svc_steady_init_upstream(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_svc_steady_init_peer(ngx_http_request_t *r, ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_svc_steady_get_peer(ngx_peer_connection_t *pc, void *data);
static void ngx_http_svc_steady_free_peer(ngx_peer_connection_t *pc, void *data, ngx_uint_t state);


static ngx_command_t  ngx_http_svc_steady_commands[] = {
    { ngx_string("svc_steady"),
      NGX_HTTP_UPS_CONF|NGX_CONF_TAKE1,
      ngx_http_svc_steady,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },
      ngx_null_command
};

static ngx_http_module_t  ngx_http_svc_steady_module_ctx = {
    NULL, NULL, NULL, NULL,
    ngx_http_svc_steady_create_conf,        /* create server configuration */
    NULL, NULL, NULL
};

ngx_module_t  ngx_http_svc_steady_module = {
    NGX_MODULE_V1,
    &ngx_http_svc_steady_module_ctx,
    ngx_http_svc_steady_commands,
    NGX_HTTP_MODULE,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NGX_MODULE_V1_PADDING
};


static void *
ngx_http_svc_steady_create_conf(ngx_conf_t *cf)
{
    ngx_http_svc_steady_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_svc_steady_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }
    conf->slot_index = NGX_CONF_UNSET;
    return conf;
}


static char *
ngx_http_svc_steady(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_svc_steady_srv_conf_t  *sscf = conf;
    ngx_http_upstream_srv_conf_t    *uscf;
    ngx_str_t                       *value;

    value = cf->args->elts;
    /* "/<digits>.sock" after the directory, and the terminating NUL, must fit the address. */
    if (value[1].len == 0 || value[1].data[0] != '/'
        || value[1].len + 1 + SVC_SLOT_DIGITS + 5 + 1 > sizeof(((struct sockaddr_un *) 0)->sun_path))
    {
        return "needs an absolute directory short enough for a unix socket's address";
    }
    sscf->dir = value[1];
    sscf->slot_index = ngx_http_get_variable_index(cf, &svc_slot_var);
    if (sscf->slot_index == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }
    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);
    uscf->peer.init_upstream = ngx_http_svc_steady_init_upstream;
    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_svc_steady_init_upstream(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *us)
{
    us->peer.init = ngx_http_svc_steady_init_peer;
    return NGX_OK;
}


static ngx_int_t
ngx_http_svc_steady_init_peer(ngx_http_request_t *r, ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_svc_steady_srv_conf_t  *sscf;
    ngx_http_svc_steady_peer_t      *peer;
    ngx_http_variable_value_t       *slot;
    ngx_uint_t                       i;
    u_char                          *p;

    sscf = ngx_http_conf_upstream_srv_conf(us, ngx_http_svc_steady_module);
    slot = ngx_http_get_indexed_variable(r, sscf->slot_index);
    if (slot == NULL || slot->not_found || slot->len == 0 || slot->len > SVC_SLOT_DIGITS) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "svc steady: the request names no slot");
        return NGX_ERROR;
    }
    for (i = 0; i < slot->len; i++) {
        if (slot->data[i] < '0' || slot->data[i] > '9') {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "svc steady: not a slot: \"%v\"", slot);
            return NGX_ERROR;
        }
    }
    /* Zeroed: the keepalive module compares whole addresses to find a socket's connections. */
    peer = ngx_pcalloc(r->pool, sizeof(ngx_http_svc_steady_peer_t));
    if (peer == NULL) {
        return NGX_ERROR;
    }
    peer->addr.sun_family = AF_UNIX;
    p = ngx_cpymem((u_char *) peer->addr.sun_path, sscf->dir.data, sscf->dir.len);
    *p++ = '/';
    p = ngx_cpymem(p, slot->data, slot->len);
    p = ngx_cpymem(p, ".sock", 5);
    peer->name.data = (u_char *) peer->addr.sun_path;
    peer->name.len = p - (u_char *) peer->addr.sun_path;

    r->upstream->peer.data = peer;
    r->upstream->peer.get = ngx_http_svc_steady_get_peer;
    r->upstream->peer.free = ngx_http_svc_steady_free_peer;
    r->upstream->peer.tries = 1;
    return NGX_OK;
}


static ngx_int_t
ngx_http_svc_steady_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_svc_steady_peer_t  *peer = data;

    pc->sockaddr = (struct sockaddr *) &peer->addr;
    pc->socklen = sizeof(struct sockaddr_un);
    pc->name = &peer->name;
    pc->cached = 0;
    pc->connection = NULL;
    return NGX_OK;
}


static void
ngx_http_svc_steady_free_peer(ngx_peer_connection_t *pc, void *data, ngx_uint_t state)
{
    if (pc->tries) {
        pc->tries--;
    }
}
