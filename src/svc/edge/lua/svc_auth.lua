-- End-user auth at the edge (issue 48; docs/auth.md "The signed-in user at the worker"): who is
-- signed in to a project's site reaches its worker in the Svc-Auth-User header, which svc sets
-- here and nowhere else (nginx replaces whatever the client sent under that name).
--
-- The user comes from the svc_auth_user cookie (svc/kit/auth_cookie.py): base64url("v1|host|expiry|
-- user JSON") "." base64url(HMAC-SHA1 under the edge's key). Checked here with no round trip: the
-- hot path of a signed-in request is one HMAC. When it is missing or expired but the browser holds
-- a session (svc_auth), the auth service is asked once (a subrequest to /__svc/auth/session): it
-- renews the cookie, or clears both when the session has ended (its Set-Cookie goes to the
-- browser with the worker's answer).

local M = {}
M.key = ""
M.renew_path = ""

local var = ngx.var
local hmac_sha1 = ngx.hmac_sha1
local sha1_bin = ngx.sha1_bin
local encode_base64 = ngx.encode_base64
local decode_base64 = ngx.decode_base64
local time = ngx.time
local capture = ngx.location.capture
local MAX = 4096

local function b64url(raw)
    local s = encode_base64(raw):gsub("%+", "-"):gsub("/", "_"):gsub("=", "")
    return s
end

local function unb64url(s)
    local pad = #s % 4
    if pad == 1 then
        return nil
    end
    s = s:gsub("%-", "+"):gsub("_", "/")
    return decode_base64(s .. string.rep("=", (4 - pad) % 4))
end

-- The user JSON of a genuine, unexpired value for `host`; nil for anything else.
function M.verify(value, host)
    if not value or #value > MAX or M.key == "" or not host then
        return nil
    end
    local dot = value:find(".", 1, true)
    if not dot then
        return nil
    end
    local payload, mac = value:sub(1, dot - 1), value:sub(dot + 1)
    -- Compared through SHA-1 of each side: what a timing difference could tell is of no use.
    if sha1_bin(b64url(hmac_sha1(M.key, payload))) ~= sha1_bin(mac) then
        return nil
    end
    local text = unb64url(payload)
    if not text then
        return nil
    end
    local h, expires, user = text:match("^v1|([^|]*)|(%d+)|(.+)$")
    if not h or h ~= host or tonumber(expires) <= time() then
        return nil
    end
    return user
end

local function from_set_cookie(set_cookie)
    if type(set_cookie) == "string" then
        set_cookie = { set_cookie }
    end
    for _, line in ipairs(set_cookie or {}) do
        local value = line:match("^svc_auth_user=([^;]*)")
        if value and value ~= "" and value ~= '""' then
            return value
        end
    end
    return nil
end

-- A header of a subrequest's answer by its lower-case name: res.header keeps the names as the
-- upstream spelled them, and svc's API (uvicorn) sends them in lower case.
local function header(res, name)
    for key, value in pairs(res.header) do
        if key:lower() == name then
            return value
        end
    end
    return nil
end

-- access_by_lua of the worker's location: sets $svc_auth_user (empty: no one signed in).
function M.pass()
    local cookie = var.cookie_svc_auth_user
    local session = var.cookie_svc_auth
    if not cookie and not session then
        return
    end
    local host = var.svc_host
    local user = M.verify(cookie, host)
    if user then
        var.svc_auth_user = user
        return
    end
    if not session or M.renew_path == "" then
        return
    end
    local res = capture(M.renew_path)
    if res.status ~= 200 and res.status ~= 401 then
        return
    end
    local set_cookie = header(res, "set-cookie")
    if set_cookie then
        ngx.header["Set-Cookie"] = set_cookie
    end
    if res.status == 200 then
        user = M.verify(from_set_cookie(set_cookie), host)
        if user then
            var.svc_auth_user = user
        end
    end
end

-- content_by_lua of /__svc/auth/session: a GET with a valid svc_auth_user cookie is answered here
-- ({"user": ...}, as the auth service answers it); anything else goes to the auth service.
function M.session()
    if ngx.req.get_method() == "GET" then
        local user = M.verify(var.cookie_svc_auth_user, var.svc_host)
        if user then
            ngx.print('{"user":', user, '}')
            return
        end
    end
    return ngx.exec("@svc_auth_session")
end

return M
