-- wrk script of every bench case: a random family (token and dates) per request, and a JSON summary for bench/run.
--
-- Why one script: the cases differ only by request shape, so they are chosen by environment variables:
--   BENCH_FAMILIES  file of "token D0 D1 familyId" lines (bench/seed.py); one family is drawn per request
--   BENCH_CASE      get | post | put-contact | group-appstart
--   BENCH_BODY      for post: the JSON body, with {d0} {d1} replaced like the path
--   BENCH_AUTH      the Authorization scheme put before the family's token (default Bearer; Basic for Kinto)
--   BENCH_PATH      for get: the path, with {d0} {d1} replaced by the family's dates (D0: before 15 writes, D1: after)
--                   and {fam} by its id (the stack's floor, bench/floor, reads no token)
--   BENCH_OUT       where done() writes the JSON summary (requests, bytes, errors, latency percentiles in µs)
--   BENCH_STATUS    when set, counts answers by status class (2xx..5xx) in response(); costs a little wrk CPU
local families = {}
local case = os.getenv("BENCH_CASE") or "get"
local template = os.getenv("BENCH_PATH") or "/health"
local counting = os.getenv("BENCH_STATUS") ~= nil
local body_template = os.getenv("BENCH_BODY") or ""
local scheme = os.getenv("BENCH_AUTH") or "Bearer"
local threads = {}
local counter = 0
status = {0, 0, 0, 0, 0}  -- global: done() reads it from each thread

function setup(thread)
   thread:set("tid", #threads + 1)
   table.insert(threads, thread)
end

function init(args)
   math.randomseed(os.time() * 1000 + (tid or 0) * 7919)
   for line in io.lines(os.getenv("BENCH_FAMILIES")) do
      local token, d0, d1, fam = line:match("^(%S+)%s+(%S+)%s+(%S+)%s+(%S+)")
      if not token then token, d0, d1 = line:match("^(%S+)%s+(%S+)%s+(%S+)") end
      if not token then token, d0 = line:match("^(%S+)%s+(%S+)"); d1 = d0 end
      table.insert(families, {token = token, d0 = d0, d1 = d1, fam = fam or ""})
   end
   if #families == 0 then error("no families in " .. tostring(os.getenv("BENCH_FAMILIES"))) end
end

local function fill(s, f)
   return (s:gsub("{d0}", f.d0):gsub("{d1}", f.d1):gsub("{fam}", f.fam))
end

local appstart = '{"requests":[' ..
   '{"id":"c","method":"GET","url":"/api/v1/ctcsync?date={d0}"},' ..
   '{"id":"e","method":"GET","url":"/api/v1/evtsync?date={d0}"},' ..
   '{"id":"p","method":"GET","url":"/api/v1/plcsync?date={d0}"},' ..
   '{"id":"t","method":"GET","url":"/api/v1/msgsyncthread?date={d0}&nb=20"},' ..
   '{"id":"w","method":"GET","url":"/api/v1/wallsync?date={d0}&nb=20"},' ..
   '{"id":"f","method":"GET","url":"/api/v1/familysync?date={d0}"}]}'

function request()
   local f = families[math.random(#families)]
   local headers = {["Authorization"] = scheme .. " " .. f.token}
   if case == "put-contact" then
      counter = counter + 1
      headers["Content-Type"] = "application/json"
      local body = string.format('{"firstName":"Writer %d","lastName":"Bench","emails":["w%d@example.org"],"phones":["+33 6 12345678"]}',
         counter, math.random(1000000))
      return wrk.format("PUT", string.format("/api/v1/contacts/w%d", math.random(200)), headers, body)
   elseif case == "post" then
      headers["Content-Type"] = "application/json"
      return wrk.format("POST", fill(template, f), headers, fill(body_template, f))
   elseif case == "group-appstart" then
      headers["Content-Type"] = "application/json"
      return wrk.format("POST", "/api/v1/group", headers, fill(appstart, f))
   end
   return wrk.format("GET", fill(template, f), headers)
end

if counting then
   response = function(s, headers, body)
      local class = math.floor(s / 100)
      if class >= 1 and class <= 5 then status[class] = status[class] + 1 end
   end
end

function done(summary, latency, requests)
   local s = {0, 0, 0, 0, 0}
   if counting then
      for _, t in ipairs(threads) do
         local ts = t:get("status")
         for i = 1, 5 do s[i] = s[i] + ts[i] end
      end
   end
   local e = summary.errors
   local out = string.format('{"requests":%d,"bytes":%d,"duration_us":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"latency_us":{"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d},"status_counted":%s,"status":[%d,%d,%d,%d,%d]}\n',
      summary.requests, summary.bytes, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
      latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
      tostring(counting), s[1], s[2], s[3], s[4], s[5])
   local path = os.getenv("BENCH_OUT")
   if path then local fh = io.open(path, "w"); fh:write(out); fh:close() else io.write(out) end
end
