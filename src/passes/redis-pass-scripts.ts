/**
 * The Lua scripts the Redis pass book runs (docs/passes.md#where-passes-are-kept): each checks and
 * changes the account's passes in one step inside Redis, so instances racing for a pass's last use,
 * or issuing one booking's pass, see one answer. Their checks follow src/passes/pass.ts.
 */

// KEYS[1] passes, KEYS[2] uses; ARGV[1] id, ARGV[2] now ms, ARGV[3] device id or '', ARGV[4] now ISO,
// ARGV[5] '0' when now is outside the pass's weekly hours or its turnover windows (opensNow() in
// src/passes/pass.ts decides: Redis has no time zones; a pass's hours never change once issued, and
// its turnover windows come from the calendar's passes as the instance read them for this message).
// {n, 'ok'}: the use counted (n uses now); {-1, why, used}: refused, nothing counted. The checks
// follow passCheck() in src/passes/pass.ts, in its order (passState's, then the hours, then the
// door): revoked, used up, expired, not valid yet, outside its hours, not for this door. Change
// one, change both.
export const USE = `
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {-1, 'gone', 0} end
local p = cjson.decode(raw)
local used = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
local now = tonumber(ARGV[2])
if p.revoked ~= cjson.null and p.revoked ~= nil then return {-1, 'revoked', used} end
if p.uses ~= cjson.null and p.uses ~= nil and used >= tonumber(p.uses) then return {-1, 'used-up', used} end
if now >= tonumber(p.u) then return {-1, 'expired', used} end
if now < tonumber(p.f) then return {-1, 'upcoming', used} end
if ARGV[5] == '0' then return {-1, 'closed', used} end
if ARGV[3] ~= '' then
  local ok = false
  for _, d in ipairs(p.doors) do if tostring(d.deviceId) == ARGV[3] then ok = true end end
  if not ok then return {-1, 'door', used} end
end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
if used == 0 then redis.call('HSET', KEYS[2], ARGV[1] .. ':first', ARGV[4]) end
return {used + 1, 'ok', used + 1}`;

// A booking's field in `pass-bookings`, as bookingKey() writes it.
const BOOKING_FIELD = `
local function booking(p)
  if type(p) == 'table' and type(p.source) == 'string' and type(p.ref) == 'string' then
    return p.source .. '\\0' .. p.ref
  end
  return nil
end
local function unrevoked(p) return p.revoked == nil or p.revoked == cjson.null end`;

// A calendar read's write is refused once a later read of that calendar has begun, on any instance
// (docs/passes.md#from-a-booking-calendar): KEYS[n] is the calendar's read counter
// (`pass-read:<node id>`, which each read increments as it begins) and ARGV[m] the stamp the
// writing read was given ('' for a write of no read: never refused).
const LATER_READ = (key: string, arg: string) =>
  `local function later() return ARGV[${arg}] ~= '' and tonumber(redis.call('GET', KEYS[${key}]) or '0') > tonumber(ARGV[${arg}]) end`;

// KEYS[1] passes, KEYS[2] version, KEYS[3] changed, KEYS[4] uses, KEYS[5] bookings, KEYS[6] the
// writing read's counter; ARGV[1] id, ARGV[2] the revision it was made from ('' for a new pass),
// ARGV[3] the pass as JSON ('' deletes it), ARGV[4] the writing read's stamp or ''. 0: another
// change came first, nothing written; -1: a later read of the calendar has begun, nothing
// written; else the new version.
export const PUT = `${BOOKING_FIELD}
${LATER_READ("6", "4")}
if later() then return -1 end
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '' then
  if cur then return 0 end
else
  if not cur then return 0 end
  if tostring(cjson.decode(cur).rev) ~= ARGV[2] then return 0 end
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1], ARGV[1] .. ':first')
  local f = cur and booking(cjson.decode(cur))
  if f and redis.call('HGET', KEYS[5], f) == ARGV[1] then redis.call('HDEL', KEYS[5], f) end
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  local f = ARGV[2] == '' and booking(cjson.decode(ARGV[3]))
  if f then redis.call('HSET', KEYS[5], f, ARGV[1]) end
end
local v = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[3], v, ARGV[1])
return v`;

// A booking's pass (docs/passes.md#from-a-booking-calendar): KEYS[1] passes, KEYS[2] version,
// KEYS[3] changed, KEYS[4] bookings, KEYS[5] the issuing read's counter; ARGV[1] id, ARGV[2] the
// pass as JSON, ARGV[3] its booking's field, ARGV[4] the issuing read's stamp or ''. {0, id}: that
// booking has pass id, not revoked: nothing written; {-1, ''}: the id is taken; {-2, ''}: a later
// read of the calendar has begun, nothing written; else {the new version, id}.
export const ISSUE = `${BOOKING_FIELD}
${LATER_READ("5", "4")}
if later() then return {-2, ''} end
if redis.call('HEXISTS', KEYS[4], '') == 0 then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local ok, p = pcall(cjson.decode, all[i + 1])
    local f = ok and type(p) == 'table' and unrevoked(p) and booking(p)
    if f then redis.call('HSET', KEYS[4], f, all[i]) end
  end
  redis.call('HSET', KEYS[4], '', '1')
end
local have = redis.call('HGET', KEYS[4], ARGV[3])
local raw = have and redis.call('HGET', KEYS[1], have)
if raw and unrevoked(cjson.decode(raw)) then return {0, have} end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return {-1, ''} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[4], ARGV[3], ARGV[1])
local v = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[3], v, ARGV[1])
return {v, ARGV[1]}`;
