-- wrk script: POSTs Agents named <prefix>-<thread>-<n>, unique per wrk thread; the prefix is
-- wrk's first script argument (`wrk ... -- warm`), `agent` without one. Used by
-- e2e/benches/system.rs and bench/create-instructions.sh.
local threads, counter, prefix = 0, 0, "agent"
function init(args)
  prefix = args[1] or prefix
end
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
request = function()
  counter = counter + 1
  local body = '{"apiVersion":"workflows.keelson.dev/v1alpha1","kind":"Agent","metadata":{"name":"' .. prefix .. '-'
    .. id .. '-' .. counter .. '"},"spec":{"image":"busybox:1.36","command":["sh","-c"],"args":["echo step '
    .. counter .. '"],"capabilities":["bench"],"version":"1.0.0"}}'
  local headers = { ["Content-Type"] = "application/json", ["Authorization"] = wrk.headers["Authorization"] }
  return wrk.format("POST", nil, headers, body)
end
