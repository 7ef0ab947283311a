-- Change lines as svc sends them to nginx, one per line: read from svc's files when nginx starts or
-- reloads, and from the body of a control server's POST. Shared by svc_routes.lua (the routing
-- table) and svc_tls.lua (the certificates); `apply(line)` is theirs: true, or nil and why.

local M = {}

-- At start and reload (init_by_lua): each file's lines, in order; a bad line is logged and skipped.
function M.load(apply, what, paths)
    for _, path in ipairs(paths) do
        local file = io.open(path, "rb")
        if file then
            for line in file:lines() do
                local ok, err = apply(line)
                if not ok then
                    ngx.log(ngx.ERR, what, ", ", path, ": ", err)
                end
            end
            file:close()
        end
    end
end

-- A control server's POST: apply each line of the body; answers how many, or 400 at the first bad one.
function M.update(apply)
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

return M
