-- svc's routing table inside nginx (docs/edge.md "How a request finds its site"): one entry per
-- host in the shared dictionary svc_routes, its value the directory the host serves, its flags the
-- host's kind (see below). Requests read it through svc's nginx module (module/, C: a Lua call per
-- request costs too much); this file fills it, and asks the access check. svc changes entries through
-- the control server (POST /routes, one change per line) and keeps the table on disk: `routes`, a
-- snapshot, and `routes.log`, the changes since; nginx reads both when it starts or reloads.
--
-- A change line:   set <TAB> host <TAB> flags <TAB> directory [<TAB> worker <TAB> upstream]
--                  del <TAB> host
--                  flush                (every entry removed: a full table follows)
-- Kinds: 1 public, 2 protected, 3 no deployment, 4 protected without deployment, 5 pending (the
-- module's $svc_kind is 6 or 7 for 2 or 4 when the check cache holds an allowed answer).
-- Flags: the kind + 16 when the host has a worker (its key and upstream follow the directory in
-- the entry's value) + 32 x the access generation.

local lines = require("svc_lines")

local M = {}
local routes = ngx.shared.svc_routes
-- The check cache (nil when it is off): allowed answers of the access check, by check_key().
local checks = ngx.shared.svc_check
local var = ngx.var
local floor = math.floor
local md5 = ngx.md5
local capture = ngx.location.capture
local WORKER = 16

local function apply(line)
    local op, host, rest = line:match("^(%l+)\t([^\t]+)(.*)$")
    if op == "set" then
        local flags, root = rest:match("^\t(%d+)\t(.+)$")
        if not flags then
            return nil, "not a change: " .. line
        end
        -- A worker's key and upstream stay in the value, after the directory (split per request
        -- only for hosts whose flags say they have a worker).
        if floor(tonumber(flags) / WORKER) % 2 == 1 and not root:match("^[^\t]+\t[^\t]+\t[^\t]+$") then
            return nil, "not a change: " .. line
        end
        -- safe_set: never evicts another host's entry to make room.
        local ok, err = routes:safe_set(host, root, 0, tonumber(flags))
        if not ok then
            return nil, "svc_routes: " .. tostring(err)
        end
    elseif op == "del" then
        routes:delete(host)
    elseif line == "flush" then
        routes:flush_all()
    else
        return nil, "not a change: " .. line
    end
    return true
end

-- At start and reload (init_by_lua): the snapshot, then the changes since.
function M.load(...)
    lines.load(apply, "svc routes", {...})
end

-- The control server's POST /routes: apply each line; answers how many.
function M.update()
    return lines.update(apply)
end

-- The check cache's key for this request (svc's nginx module computes the same: module/), from
-- what decides access: the host, its access generation and live deployment (a policy change, a
-- revocation or a deploy moves to a new key at once), the svc_access cookie as nginx reads it
-- (never the site's own cookies) and an MD5 of the bypass header (the secret itself is kept
-- nowhere); nil for a request with neither credential.
local function check_key(host, generation, root)
    local cookie = var.cookie_svc_access
    local bypass = var.http_svc_access_bypass
    if not cookie and not bypass then
        return nil
    end
    return host .. "\t" .. generation .. "\t" .. root .. "\t" .. (cookie or "") .. "\t" .. (bypass and md5(bypass) or "")
end

-- A header of a subrequest's answer, by its name in lower case ("" when absent): the table keeps the
-- names as the API sent them.
local function header(headers, name)
    for key, value in pairs(headers) do
        if key:lower() == name then
            return type(value) == "table" and value[1] or value
        end
    end
    return ""
end

-- The access check (access_by_lua of the protected locations, for a request the cache did not
-- answer): asks the API (the check location, a subrequest), as auth_request would: 2xx passes and
-- is kept for check_seconds when the request's credential is its one svc_access cookie or the
-- bypass header (not when the Cookie header names svc_access twice: a sibling host may plant one,
-- and the API reads them all); 401 goes to the login (X-Svc-Login), 403 is refused (the edge's own
-- 404 page), anything else is an error.
function M.check()
    local answer = capture(M.check_path)
    local status = answer.status
    if status >= 200 and status < 300 then
        if checks and var.svc_check_unkeyed == "" then
            local key = check_key(var.svc_host, var.svc_gen, var.svc_root)
            if key then
                -- The value is the answer's expiry (unix seconds), which svc's module keeps to
                -- in its memo of the answers (module/).
                checks:set(key, ngx.time() + M.check_seconds, M.check_seconds)
            end
        end
        return
    end
    if status == 401 then
        var.svc_login = header(answer.header, "x-svc-login")
        return ngx.exit(401)
    end
    if status == 403 then
        -- Not 403: the locations map that (a directory without index.html) to the deployment's own
        -- /404.html, which is behind the policy; 423 is the edge's own 404 page (nginx.conf.j2).
        return ngx.exit(423)
    end
    ngx.log(ngx.ERR, "svc access check answered ", status)
    return ngx.exit(500)
end

-- The control server's GET /traffic: the counts svc's module keeps (see module/), one
-- "<kind>\t<host>\t<minute>[\t<class>]\t<value>" line each, taken away as they are read (each
-- decremented by what was read: what is counted meanwhile stays for the next time).
function M.traffic()
    local counts = ngx.shared.svc_traffic
    local out = {}
    -- A minute before the last: no request counts in it any more, so its keys go once read.
    local past = floor(ngx.time() / 60) - 1
    if counts then
        for _, key in ipairs(counts:get_keys(0)) do
            local value = counts:get(key)
            if value and value > 0 then
                counts:incr(key, -value)
                out[#out + 1] = key .. "\t" .. string.format("%d", value)
            end
            local minute = tonumber(key:match("^%a\t[^\t]+\t(%d+)"))
            if minute and minute < past then
                counts:delete(key)
            end
        end
    end
    ngx.print(table.concat(out, "\n"))
end

return M
