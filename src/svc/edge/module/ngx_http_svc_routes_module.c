/*
 * svc's routing table, read by nginx without Lua (docs/edge.md "How a request finds its site").
 *
 * The table is the Lua module's shared dictionary svc_routes (written by lua/svc_routes.lua: one
 * entry per host, its value "root[\tworker\tupstream]", its flags the kind + 16 if a worker + 32 x
 * the access generation). Reading it from Lua costs every request a Lua call (~2 us here: a new
 * environment table per set_by_lua, the host as a Lua string); this module reads it in C, once per
 * request, when $svc_kind (or any of its variables) is first used, and keeps all seven for the
 * request (internal redirects included: one request, one version).
 *
 * It uses lua-nginx-module's C API (ngx_http_lua_find_zone) and the dictionary read that
 * lua-resty-core calls through the FFI (ngx_http_lua_ffi_shdict_get): loaded after that module.
 *
 *   $svc_kind      1 public, 2 protected, 3 no deployment, 4 protected without deployment,
 *                  5 pending, "" unknown; 6 and 7 for 2 and 4 when the check cache (the dictionary
 *                  svc_check) holds an allowed answer for this request's credential
 *   $svc_root      the directory served (svc_routes_unknown_root for an unknown host)
 *   $svc_gen       a protected host's access generation
 *   $svc_worker    the live deployment's worker key, "" without one
 *   $svc_upstream  the upstream that serves it: a loading workerd process's, or svc_steady
 *   $svc_slot      for svc_steady, the project's socket slot (the entry's "svc_steady:<slot>";
 *                  ngx_http_svc_steady_module.c)
 *   $svc_detour    "" when the files of $svc_root answer the request as they are (kinds 1, 3, 6
 *                  and 7 without a worker), else "1"
 *
 * And $svc_host: the one host of the request, the one every variable above looks up: nginx's
 * headers_in.server of the main request (the host of an absolute-form request target when there is
 * one, else the Host header's: RFC 9112 3.2.2; lowercase, without port or trailing dot). The
 * config uses it wherever it names the host (the access check's X-Svc-Host, the check cache's key,
 * the worker's Host, the https redirect, the logs): a subrequest's own $host is not it (Lua's
 * ngx.location.capture rebuilds a subrequest's headers, its host from the Host header alone).
 *
 * And the edge's traffic counts (docs/workers.md "Logs and traffic"): $svc_traffic, read once by
 * the traffic log's `if=` when the request is logged, counts a request to a routed host and is "1"
 * for the first SVC_SAMPLES requests of the host in each second (the ones written to the log as
 * lines). Each worker counts in a table of its own (no lock, no shared memory touched per
 * request) and adds it to the dictionary svc_traffic every second and when it exits
 * ("c\t<host>\t<minute>\t<status class>" and "b\t<host>\t<minute>", the body bytes), where svc
 * collects them through the control server.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <ngx_md5.h>


ngx_shm_zone_t *ngx_http_lua_find_zone(u_char *name_data, size_t name_len);
int ngx_http_lua_ffi_shdict_incr(ngx_shm_zone_t *zone, u_char *key, size_t key_len, double *value,
    char **err, int has_init, double init, long init_ttl, int *forcible);
int ngx_http_lua_ffi_shdict_get(ngx_shm_zone_t *zone, u_char *key, size_t key_len, int *value_type,
    u_char **str_value_buf, size_t *str_value_len, double *num_value, int *user_flags, int get_stale,
    int *is_stale, char **err);

#define SVC_SHDICT_TSTRING 4  /* LUA_TSTRING */
#define SVC_SHDICT_TNUMBER 3  /* LUA_TNUMBER */
#define SVC_KINDS 16
#define SVC_WORKER 16
#define SVC_GENERATIONS 32
#define SVC_VALUE_BUF 1024
/* Log lines a second per host and worker (the counts take every request). */
#define SVC_SAMPLES 100
/* How long an uncollected count is kept, in ms (svc collects every second). */
#define SVC_COUNT_TTL 900000
/* A worker's table: hosts with requests in the current second's flush; a full one counts in the
 * dictionary directly. */
#define SVC_SLOTS 1024
#define SVC_PROBES 8
#define SVC_FLUSH_MS 1000

typedef struct {
    ngx_uint_t  used;
    time_t      minute;
    time_t      second;
    ngx_uint_t  sampled;
    ngx_uint_t  count[4];  /* 2xx 3xx 4xx 5xx */
    off_t       bytes;
    size_t      host_len;
    u_char      host[256];
} svc_slot_t;

static svc_slot_t  *svc_slots;

/* A worker's memo of the check cache's allowed answers, in its own memory. The dictionary's read
 * hashes the whole key (host, generation, root, cookie: ~300 bytes) with a CRC32 a nibble at a
 * time, ~1 us a protected request here (perf: 13% of the worker's time); this finds the same
 * answer with MurmurHash2 and one memcmp of the whole key. An entry holds until the expiry the
 * access check wrote as the dictionary's value, never longer than there. */
#define SVC_MEMO_SLOTS 4096

typedef struct {
    time_t   expires;
    size_t   len;
    size_t   size;
    u_char  *key;
} svc_memo_t;

static svc_memo_t  svc_memo[SVC_MEMO_SLOTS];
static ngx_event_t  svc_flush_event;
static ngx_connection_t  svc_flush_connection;

enum { SVC_KIND, SVC_ROOT, SVC_GEN, SVC_WORKER_VAR, SVC_UPSTREAM, SVC_DETOUR, SVC_SLOT, SVC_NVARS };

static ngx_str_t  svc_var_names[SVC_NVARS] = {
    ngx_string("svc_kind"), ngx_string("svc_root"), ngx_string("svc_gen"),
    ngx_string("svc_worker"), ngx_string("svc_upstream"), ngx_string("svc_detour"), ngx_string("svc_slot")
};
static ngx_str_t  svc_cookie_var = ngx_string("cookie_svc_access");
static ngx_str_t  svc_bypass_var = ngx_string("http_svc_access_bypass");

typedef struct {
    ngx_str_t   unknown_root;
    ngx_int_t   index[SVC_NVARS];
    ngx_uint_t  cookie_hash;
    ngx_uint_t  bypass_hash;
} ngx_http_svc_routes_main_conf_t;

/* Per worker: the dictionaries, found at the first request. */
static ngx_shm_zone_t  *svc_routes_zone;
static ngx_shm_zone_t  *svc_check_zone;
static ngx_shm_zone_t  *svc_traffic_zone;
static ngx_flag_t       svc_zones_found;


static ngx_int_t ngx_http_svc_routes_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_svc_routes_init(ngx_conf_t *cf);
static void *ngx_http_svc_routes_create_main_conf(ngx_conf_t *cf);
static ngx_int_t ngx_http_svc_routes_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data);
static ngx_int_t ngx_http_svc_traffic_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data);
static ngx_str_t  svc_traffic_name = ngx_string("svc_traffic");
static ngx_int_t ngx_http_svc_host_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data);
static ngx_str_t  svc_host_name = ngx_string("svc_host");
static ngx_int_t ngx_http_svc_routes_init_process(ngx_cycle_t *cycle);
static void svc_find_zones(void);
static void ngx_http_svc_routes_exit_process(ngx_cycle_t *cycle);


static ngx_command_t  ngx_http_svc_routes_commands[] = {
    { ngx_string("svc_routes_unknown_root"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_svc_routes_main_conf_t, unknown_root),
      NULL },
      ngx_null_command
};

static ngx_http_module_t  ngx_http_svc_routes_module_ctx = {
    ngx_http_svc_routes_add_variables,      /* preconfiguration */
    ngx_http_svc_routes_init,               /* postconfiguration */
    ngx_http_svc_routes_create_main_conf,   /* create main configuration */
    NULL, NULL, NULL, NULL, NULL
};

ngx_module_t  ngx_http_svc_routes_module = {
    NGX_MODULE_V1,
    &ngx_http_svc_routes_module_ctx,
    ngx_http_svc_routes_commands,
    NGX_HTTP_MODULE,
    NULL,                                   /* init master */
    NULL,                                   /* init module */
    ngx_http_svc_routes_init_process,       /* init process */
    NULL,                                   /* init thread */
    NULL,                                   /* exit thread */
    ngx_http_svc_routes_exit_process,       /* exit process */
    NULL,                                   /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_http_svc_routes_create_main_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_svc_routes_main_conf_t));
}


static ngx_int_t
ngx_http_svc_routes_add_variables(ngx_conf_t *cf)
{
    ngx_uint_t             i;
    ngx_http_variable_t   *var;

    for (i = 0; i < SVC_NVARS; i++) {
        var = ngx_http_add_variable(cf, &svc_var_names[i], 0);
        if (var == NULL) {
            return NGX_ERROR;
        }
        var->get_handler = ngx_http_svc_routes_variable;
        var->data = i;
    }
    var = ngx_http_add_variable(cf, &svc_traffic_name, 0);
    if (var == NULL) {
        return NGX_ERROR;
    }
    var->get_handler = ngx_http_svc_traffic_variable;
    var = ngx_http_add_variable(cf, &svc_host_name, 0);
    if (var == NULL) {
        return NGX_ERROR;
    }
    var->get_handler = ngx_http_svc_host_variable;
    return NGX_OK;
}


static ngx_int_t
ngx_http_svc_routes_init(ngx_conf_t *cf)
{
    ngx_uint_t                        i;
    ngx_http_svc_routes_main_conf_t  *smcf;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_svc_routes_module);
    for (i = 0; i < SVC_NVARS; i++) {
        smcf->index[i] = ngx_http_get_variable_index(cf, &svc_var_names[i]);
        if (smcf->index[i] == NGX_ERROR) {
            return NGX_ERROR;
        }
    }
    smcf->cookie_hash = ngx_hash_key(svc_cookie_var.data, svc_cookie_var.len);
    smcf->bypass_hash = ngx_hash_key(svc_bypass_var.data, svc_bypass_var.len);
    return NGX_OK;
}


static void
svc_set(ngx_http_request_t *r, ngx_int_t index, u_char *data, size_t len)
{
    ngx_http_variable_value_t  *v = &r->variables[index];

    v->data = data;
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->escape = 0;
}


/* A copy of the value in the request's pool (the dictionary's lives in shared memory). */
static u_char *
svc_get(ngx_http_request_t *r, ngx_shm_zone_t *zone, u_char *key, size_t key_len, size_t *len,
    int *flags)
{
    u_char   buf[SVC_VALUE_BUF], *value, *copy;
    size_t   value_len;
    int      type, stale, rc;
    double   num;
    char    *err;

    value = buf;
    value_len = sizeof(buf);
    *flags = 0;
    rc = ngx_http_lua_ffi_shdict_get(zone, key, key_len, &type, &value, &value_len, &num, flags, 0,
                                     &stale, &err);
    if (rc != NGX_OK || type != SVC_SHDICT_TSTRING) {
        if (value != buf) {
            free(value);
        }
        return NULL;
    }
    copy = ngx_pnalloc(r->pool, value_len ? value_len : 1);
    if (copy != NULL) {
        ngx_memcpy(copy, value, value_len);
    }
    if (value != buf) {
        free(value);  /* the dictionary allocated a larger buffer (malloc) */
    }
    *len = value_len;
    return copy;
}


/* Whether the check cache holds an allowed answer for this request: the key of
 * svc_routes.lua's check_key() (host, generation, root, svc_access cookie, MD5 of the bypass
 * header), none for a request with neither credential. */
static ngx_flag_t
svc_checked(ngx_http_request_t *r, ngx_http_svc_routes_main_conf_t *smcf, ngx_str_t *host,
    ngx_str_t *gen, ngx_str_t *root)
{
    ngx_http_variable_value_t  *cookie, *bypass;
    ngx_md5_t                   md5;
    u_char                      digest[16], hex[32], *key, *p;
    size_t                      len, cookie_len;
    int                         flags;

    if (svc_check_zone == NULL) {
        return 0;
    }
    cookie = ngx_http_get_variable(r, &svc_cookie_var, smcf->cookie_hash);
    bypass = ngx_http_get_variable(r, &svc_bypass_var, smcf->bypass_hash);
    if (cookie == NULL || bypass == NULL || (cookie->not_found && bypass->not_found)) {
        return 0;
    }
    cookie_len = cookie->not_found ? 0 : cookie->len;
    if (!bypass->not_found) {
        ngx_md5_init(&md5);
        ngx_md5_update(&md5, bypass->data, bypass->len);
        ngx_md5_final(digest, &md5);
        ngx_hex_dump(hex, digest, 16);
    }
    len = host->len + gen->len + root->len + cookie_len + 4 + (bypass->not_found ? 0 : 32);
    key = ngx_pnalloc(r->pool, len);
    if (key == NULL) {
        return 0;
    }
    p = ngx_cpymem(key, host->data, host->len);
    *p++ = '\t';
    p = ngx_cpymem(p, gen->data, gen->len);
    *p++ = '\t';
    p = ngx_cpymem(p, root->data, root->len);
    *p++ = '\t';
    p = ngx_cpymem(p, cookie->data, cookie_len);
    *p++ = '\t';
    if (!bypass->not_found) {
        p = ngx_cpymem(p, hex, 32);
    }
    {
        u_char       buf[8], *value = buf;
        size_t       value_len = sizeof(buf), key_len = p - key;
        int          type, stale, rc;
        double       num;
        char        *err;
        time_t       now = ngx_time();
        svc_memo_t  *memo = &svc_memo[ngx_murmur_hash2(key, key_len) % SVC_MEMO_SLOTS];

        if (memo->key != NULL && memo->len == key_len && memo->expires > now
            && ngx_memcmp(memo->key, key, key_len) == 0)
        {
            return 1;
        }
        rc = ngx_http_lua_ffi_shdict_get(svc_check_zone, key, key_len, &type, &value, &value_len, &num,
                                         &flags, 0, &stale, &err);
        if (value != buf) {
            free(value);
        }
        if (rc != NGX_OK || type != SVC_SHDICT_TNUMBER || (time_t) num <= now) {
            return 0;
        }
        /* An allowed answer, until the expiry the access check wrote: kept in the memo as long. */
        if (memo->key == NULL || memo->size < key_len) {
            ngx_free(memo->key);
            memo->key = ngx_alloc(key_len, r->connection->log);
            memo->size = memo->key != NULL ? key_len : 0;
        }
        if (memo->key != NULL) {
            ngx_memcpy(memo->key, key, key_len);
            memo->len = key_len;
            memo->expires = (time_t) num;
        }
        return 1;
    }
}


static ngx_int_t
svc_lookup(ngx_http_request_t *r, ngx_http_svc_routes_main_conf_t *smcf)
{
    ngx_str_t   host, root, worker, upstream, gen, slot;
    u_char     *value, *tab, *end, *p;
    size_t      len;
    int         flags;
    ngx_uint_t  kind;
    static u_char  kinds[] = "0123456789";

    svc_find_zones();
    ngx_str_null(&worker);
    ngx_str_null(&upstream);
    ngx_str_null(&gen);
    ngx_str_null(&slot);
    host = r->main->headers_in.server;
    value = NULL;
    if (svc_routes_zone != NULL && host.len > 0) {
        value = svc_get(r, svc_routes_zone, host.data, host.len, &len, &flags);
    }
    if (value != NULL && (flags % SVC_KINDS < 1 || flags % SVC_KINDS > 5)) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "svc routes: no such kind for \"%V\"", &host);
        value = NULL;
    }
    if (value == NULL || flags <= 0) {
        svc_set(r, smcf->index[SVC_KIND], (u_char *) "", 0);
        svc_set(r, smcf->index[SVC_ROOT], smcf->unknown_root.data, smcf->unknown_root.len);
        svc_set(r, smcf->index[SVC_GEN], (u_char *) "", 0);
        svc_set(r, smcf->index[SVC_WORKER_VAR], (u_char *) "", 0);
        svc_set(r, smcf->index[SVC_UPSTREAM], (u_char *) "", 0);
        svc_set(r, smcf->index[SVC_SLOT], (u_char *) "", 0);
        svc_set(r, smcf->index[SVC_DETOUR], (u_char *) "1", 1);
        return NGX_OK;
    }
    kind = flags % SVC_KINDS;
    root.data = value;
    root.len = len;
    if (flags % SVC_GENERATIONS >= SVC_WORKER) {
        /* root \t worker \t upstream */
        end = value + len;
        tab = ngx_strlchr(value, end, '\t');
        p = tab ? ngx_strlchr(tab + 1, end, '\t') : NULL;
        if (p == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "svc routes: a bad entry for \"%V\"", &host);
            return NGX_ERROR;
        }
        root.len = tab - value;
        worker.data = tab + 1;
        worker.len = p - worker.data;
        upstream.data = p + 1;
        upstream.len = end - upstream.data;
        /* "svc_steady:<slot>": the steady upstream, and the slot its balancer connects to. */
        p = ngx_strlchr(upstream.data, end, ':');
        if (p != NULL) {
            upstream.len = p - upstream.data;
            slot.data = p + 1;
            slot.len = end - slot.data;
        }
    }
    if (kind == 2 || kind == 4) {
        gen.data = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
        if (gen.data == NULL) {
            return NGX_ERROR;
        }
        gen.len = ngx_sprintf(gen.data, "%d", flags / SVC_GENERATIONS) - gen.data;
        if (svc_checked(r, smcf, &host, &gen, &root)) {
            kind = (kind == 2) ? 6 : 7;
        }
    }
    svc_set(r, smcf->index[SVC_KIND], &kinds[kind], 1);
    svc_set(r, smcf->index[SVC_ROOT], root.data, root.len);
    svc_set(r, smcf->index[SVC_GEN], gen.data, gen.len);
    svc_set(r, smcf->index[SVC_WORKER_VAR], worker.data, worker.len);
    svc_set(r, smcf->index[SVC_UPSTREAM], upstream.data, upstream.len);
    svc_set(r, smcf->index[SVC_SLOT], slot.data, slot.len);
    if (worker.len > 0 || kind == 2 || kind == 4 || kind == 5) {
        svc_set(r, smcf->index[SVC_DETOUR], (u_char *) "1", 1);
    } else {
        svc_set(r, smcf->index[SVC_DETOUR], (u_char *) "", 0);
    }
    return NGX_OK;
}


/* $svc_host (see the top of this file). */
static ngx_int_t
ngx_http_svc_host_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    v->data = r->main->headers_in.server.data;
    v->len = r->main->headers_in.server.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->escape = 0;
    return NGX_OK;
}


static ngx_int_t
ngx_http_svc_routes_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_svc_routes_main_conf_t  *smcf;

    smcf = ngx_http_get_module_main_conf(r, ngx_http_svc_routes_module);
    if (svc_lookup(r, smcf) != NGX_OK) {
        return NGX_ERROR;
    }
    *v = r->variables[smcf->index[data]];
    return NGX_OK;
}


/* Adds `by` to a count of the dictionary svc_traffic (made when missing, kept SVC_COUNT_TTL). */
static void
svc_count(u_char *key, size_t len, double by)
{
    double  value = by;
    int     forcible;
    char   *err;

    (void) ngx_http_lua_ffi_shdict_incr(svc_traffic_zone, key, len, &value, &err, 1, 0, SVC_COUNT_TTL,
                                        &forcible);
}


static void
svc_find_zones(void)
{
    if (!svc_zones_found) {
        svc_routes_zone = ngx_http_lua_find_zone((u_char *) "svc_routes", sizeof("svc_routes") - 1);
        svc_check_zone = ngx_http_lua_find_zone((u_char *) "svc_check", sizeof("svc_check") - 1);
        svc_traffic_zone = ngx_http_lua_find_zone((u_char *) "svc_traffic", sizeof("svc_traffic") - 1);
        svc_zones_found = 1;
    }
}


/* A slot's counts into the dictionary. */
static void
svc_flush_slot(svc_slot_t *slot)
{
    u_char      key[64 + 256], *p;
    ngx_uint_t  i;
    ngx_str_t   host;

    host.data = slot->host;
    host.len = slot->host_len;
    for (i = 0; i < 4; i++) {
        if (slot->count[i] > 0) {
            p = ngx_sprintf(key, "c\t%V\t%T\t%ui", &host, slot->minute, i + 2);
            svc_count(key, p - key, (double) slot->count[i]);
        }
    }
    if (slot->bytes > 0) {
        p = ngx_sprintf(key, "b\t%V\t%T", &host, slot->minute);
        svc_count(key, p - key, (double) slot->bytes);
    }
}


static void
svc_flush(void)
{
    ngx_uint_t  i;

    if (svc_slots == NULL || svc_traffic_zone == NULL) {
        return;
    }
    for (i = 0; i < SVC_SLOTS; i++) {
        if (svc_slots[i].used) {
            svc_flush_slot(&svc_slots[i]);
        }
    }
    ngx_memzero(svc_slots, SVC_SLOTS * sizeof(svc_slot_t));
}


static void
svc_flush_handler(ngx_event_t *ev)
{
    svc_flush();
    if (!ngx_exiting && !ngx_quit) {
        ngx_add_timer(ev, SVC_FLUSH_MS);
    }
}


static ngx_int_t
ngx_http_svc_routes_init_process(ngx_cycle_t *cycle)
{
    svc_find_zones();
    if (svc_traffic_zone == NULL) {
        return NGX_OK;  /* no traffic kept */
    }
    svc_slots = ngx_pcalloc(cycle->pool, SVC_SLOTS * sizeof(svc_slot_t));
    if (svc_slots == NULL) {
        return NGX_ERROR;
    }
    svc_flush_connection.fd = (ngx_socket_t) -1;
    svc_flush_event.handler = svc_flush_handler;
    svc_flush_event.log = cycle->log;
    svc_flush_event.data = &svc_flush_connection;
    svc_flush_event.cancelable = 1;  /* a worker shutting down does not wait for it */
    ngx_add_timer(&svc_flush_event, SVC_FLUSH_MS);
    return NGX_OK;
}


static void
ngx_http_svc_routes_exit_process(ngx_cycle_t *cycle)
{
    svc_flush();  /* what this worker counted since its last flush */
}


/* This worker's slot of (host, minute), claimed when free; NULL when the table is full there. */
static svc_slot_t *
svc_slot(ngx_str_t *host, time_t minute)
{
    ngx_uint_t   hash, i;
    svc_slot_t  *slot;

    hash = ngx_hash_key(host->data, host->len) ^ (ngx_uint_t) minute;
    for (i = 0; i < SVC_PROBES; i++) {
        slot = &svc_slots[(hash + i) % SVC_SLOTS];
        if (!slot->used) {
            slot->used = 1;
            slot->minute = minute;
            slot->host_len = host->len;
            ngx_memcpy(slot->host, host->data, host->len);
            return slot;
        }
        if (slot->minute == minute && slot->host_len == host->len
            && ngx_memcmp(slot->host, host->data, host->len) == 0)
        {
            return slot;
        }
    }
    return NULL;
}


static ngx_int_t
ngx_http_svc_traffic_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_svc_routes_main_conf_t  *smcf;
    ngx_http_variable_value_t        *kind;
    ngx_uint_t                        status, class;
    off_t                             sent;
    time_t                            now;
    ngx_str_t                         host;
    svc_slot_t                       *slot, alone;

    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = (u_char *) "";
    v->len = 0;
    smcf = ngx_http_get_module_main_conf(r, ngx_http_svc_routes_module);
    kind = ngx_http_get_indexed_variable(r, smcf->index[SVC_KIND]);
    host = r->main->headers_in.server;
    if (kind == NULL || kind->len == 0 || host.len == 0 || host.len > 255 || svc_traffic_zone == NULL) {
        return NGX_OK;  /* a host nobody routes: neither counted nor logged */
    }
    status = r->err_status ? r->err_status : r->headers_out.status;
    class = status < 300 ? 2 : (status >= 500 ? 5 : status / 100);
    sent = r->connection->sent - r->header_size;
    now = ngx_time();
    slot = svc_slots ? svc_slot(&host, now / 60) : NULL;
    if (slot == NULL) {
        /* No room in this worker's table: this request straight into the dictionary (no line). */
        ngx_memzero(&alone, sizeof(alone));
        alone.minute = now / 60;
        alone.host_len = host.len;
        ngx_memcpy(alone.host, host.data, host.len);
        alone.count[class - 2] = 1;
        alone.bytes = sent > 0 ? sent : 0;
        svc_flush_slot(&alone);
        return NGX_OK;
    }
    slot->count[class - 2]++;
    if (sent > 0) {
        slot->bytes += sent;
    }
    if (slot->second != now) {
        slot->second = now;
        slot->sampled = 0;
    }
    if (slot->sampled < SVC_SAMPLES) {
        slot->sampled++;
        v->data = (u_char *) "1";
        v->len = 1;
    }
    return NGX_OK;
}
