-- The certificates the edge serves over TLS (docs/tls.md "The edge's TLS listener"): one entry per
-- name in the shared dictionary svc_certs (the app domain's wildcard "*.apps.example", each custom
-- hostname's own), picked per handshake by the name the client asks for (SNI). svc changes entries
-- through the control server (POST /certs), so a new or renewed certificate is served at the next
-- handshake: no reload, whatever the number of certificates. nginx reads svc's snapshot file when
-- it starts or reloads (svc/edge/tls.py writes it, 0600).
--
-- A change line:   set <TAB> name <TAB> notAfter (Unix seconds) <TAB> chain (base64 PEM) <TAB> key (base64 PEM)
--                      [<TAB> OCSP (base64 DER)]
--                  del <TAB> name
-- An entry at or past its notAfter is as none: no handshake with it, and its host's http is not
-- sent to https (a browser would refuse the expired certificate), from that second on, whenever
-- svc's `del` comes.
-- An entry's value is the line's payload as sent; its flags a checksum of it, so a worker's parsed
-- copy (a small cache per worker) is parsed again once the entry changes.

local ssl = require("ngx.ssl")
local ocsp = require("ngx.ocsp")
local lrucache = require("resty.lrucache")

local lines = require("svc_lines")

local M = {}
local certs = ngx.shared.svc_certs
local decode = ngx.decode_base64
local tobit = require("bit").tobit
-- The entry's checksum as a shared dict's flags: these cross the FFI as a C int, where any
-- crc32_long >= 2^31 became INT_MIN, so half of all entries had the same "version" and a worker kept
-- serving its parsed copy (old chain, key or OCSP staple) after the entry changed. bit.tobit wraps
-- the checksum into int32 range, which the flags keep as is.
local function crc32(payload)
    return tobit(ngx.crc32_long(payload))
end
-- Parsed certificates and keys, per worker (parsing a chain costs more than a handshake's lookup).
local parsed = assert(lrucache.new(4096))

local function apply(line)
    local op, name, rest = line:match("^(%l+)\t([^\t]+)(.*)$")
    if op == "set" then
        local payload = rest:match("^\t(.+)$")
        if not payload or not payload:match("^%d+\t[A-Za-z0-9+/=]+\t[A-Za-z0-9+/=]+\t?[A-Za-z0-9+/=]*$") then
            return nil, "not a change: set " .. name
        end
        local ok, err = certs:safe_set(name:lower(), payload, 0, crc32(payload))
        if not ok then
            return nil, "svc_certs: " .. tostring(err)
        end
    elseif op == "del" then
        certs:delete(name:lower())
    else
        return nil, "not a change: " .. (op or line:sub(1, 20))
    end
    return true
end

-- At start and reload (init_by_lua): svc's snapshot.
function M.load(path)
    lines.load(apply, "svc certs", {path})
end

-- The control server's POST /certs: apply each line; answers how many.
function M.update()
    return lines.update(apply)
end

-- An entry's value, unless it is at or past its notAfter (the value's first field).
local function current(key)
    local value, flags = certs:get(key)
    local not_after = value and tonumber(value:match("^(%d+)\t"))
    if not_after and not_after > ngx.time() then
        return value, flags
    end
    return nil
end

-- The entry serving `name`: its own, else the wildcard one level up (either not expired).
local function find(name)
    local value, flags = current(name)
    if value then
        return name, value, flags
    end
    local parent = name:match("^[^.]+%.(.+)$")
    if parent then
        local wildcard = "*." .. parent
        value, flags = current(wildcard)
        if value then
            return wildcard, value, flags
        end
    end
    return nil
end

-- ssl_certificate_by_lua: the certificate of the name asked for; none held (or no name asked):
-- no handshake, never another name's certificate.
function M.certificate()
    local name = ssl.server_name()
    if not name then
        return ngx.exit(ngx.ERROR)
    end
    local key, value, version = find(name:lower())
    if not key then
        return ngx.exit(ngx.ERROR)
    end
    local entry = parsed:get(key)
    if not entry or entry.version ~= version then
        local chain_b64, key_b64, ocsp_b64 = value:match("^%d+\t([^\t]+)\t([^\t]+)\t?([^\t]*)$")
        local chain, err = ssl.parse_pem_cert(decode(chain_b64 or "") or "")
        local pkey, err2 = ssl.parse_pem_priv_key(decode(key_b64 or "") or "")
        if not chain or not pkey then
            ngx.log(ngx.ERR, "svc certs: ", key, " cannot be used: ", err or err2)
            return ngx.exit(ngx.ERROR)
        end
        entry = {version = version, chain = chain, key = pkey,
                 ocsp = (ocsp_b64 ~= nil and ocsp_b64 ~= "") and decode(ocsp_b64) or nil}
        parsed:set(key, entry)
    end
    ssl.clear_certs()
    local ok, err = ssl.set_cert(entry.chain)
    if ok then
        ok, err = ssl.set_priv_key(entry.key)
    end
    if not ok then
        ngx.log(ngx.ERR, "svc certs: ", key, ": ", err)
        return ngx.exit(ngx.ERROR)
    end
    -- OCSP stapling: the responder's answer svc fetched, for a client that asks for one.
    if entry.ocsp then
        ocsp.set_ocsp_status_resp(entry.ocsp)
    end
end

-- For the http listener: "1" when a certificate not expired serves `host` (its requests go to https).
function M.held(host)
    if host == "" then
        return "0"
    end
    return find(host:lower()) and "1" or "0"
end

return M
