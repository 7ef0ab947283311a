-- svc's routing table inside nginx (docs/edge.md "How a request finds its site"): one entry per
-- host in the shared dictionary svc_routes, its value the directory the host serves, its flags the
-- host's kind (+ 16 x the access generation, for a protected project). svc changes entries through
-- the control server (POST /routes, one change per line) and keeps the table on disk: `routes`, a
-- snapshot, and `routes.log`, the changes since; nginx reads both when it starts or reloads.
--
-- A change line:   set <TAB> host <TAB> flags <TAB> directory [<TAB> worker <TAB> upstream]
--                  del <TAB> host
--                  flush                (every entry removed: a full table follows)
-- Kinds: 1 public, 2 protected, 3 no deployment, 4 protected without deployment, 5 pending.
-- Flags: the kind + 16 when the host has a worker (its key and upstream follow the directory in
-- the entry's value) + 32 x the access generation.

local M = {}
local routes = ngx.shared.svc_routes
local KINDS = 16
local WORKER = 16
local GENERATIONS = 32

local function apply(line)
    local op, host, rest = line:match("^(%l+)\t([^\t]+)(.*)$")
    if op == "set" then
        local flags, root = rest:match("^\t(%d+)\t(.+)$")
        if not flags then
            return nil, "not a change: " .. line
        end
        -- A worker's key and upstream stay in the value, after the directory (split per request
        -- only for hosts whose flags say they have a worker).
        if math.floor(tonumber(flags) / WORKER) % 2 == 1 and not root:match("^[^\t]+\t[^\t]+\t[^\t]+$") then
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
    for _, path in ipairs({...}) do
        local file = io.open(path, "rb")
        if file then
            for line in file:lines() do
                local ok, err = apply(line)
                if not ok then
                    ngx.log(ngx.ERR, "svc routes, ", path, ": ", err)
                end
            end
            file:close()
        end
    end
end

-- The control server's POST /routes: apply each line; answers how many.
function M.update()
    ngx.req.read_body()
    local body = ngx.req.get_body_data()
    if not body then
        local path = ngx.req.get_body_file()
        if path then
            local file = assert(io.open(path, "rb"))
            body = file:read("*a")
            file:close()
        end
    end
    local count = 0
    for line in (body or ""):gmatch("[^\n]+") do
        local ok, err = apply(line)
        if not ok then
            ngx.status = 400
            ngx.say(err)
            return ngx.exit(400)
        end
        count = count + 1
    end
    ngx.say(count)
end

-- Per request (set_by_lua, the host handed in): the host's kind ("" for a host nobody routes, whose
-- $svc_root is the edge's empty void/unknown); sets $svc_root to the directory it serves, for a protected host $svc_gen to its access generation, and for a host
-- with a worker $svc_worker and $svc_upstream.
function M.lookup(host)
    local value, flags = routes:get(host)
    if not value then
        ngx.var.svc_root = M.void_unknown
        return ""
    end
    local kind = flags % KINDS
    if flags % GENERATIONS >= WORKER then
        local root, worker, upstream = value:match("^([^\t]+)\t([^\t]+)\t([^\t]+)$")
        ngx.var.svc_root = root
        ngx.var.svc_worker = worker
        ngx.var.svc_upstream = upstream
    else
        ngx.var.svc_root = value
    end
    if kind == 2 or kind == 4 then
        ngx.var.svc_gen = math.floor(flags / GENERATIONS)
    end
    return kind
end

return M
