/**
 * The access rules' weekly schedule (docs/access-rules.md#schedule,
 * #time-zone-and-daylight-saving). The schedule engine itself, its windows, zones and wall clock,
 * is src/util/week-schedule.ts, one layer down, because guest passes use the same engine for their
 * weekly hours (docs/passes.md#issue); the rules import it from here.
 */
export * from "../util/week-schedule.js";
