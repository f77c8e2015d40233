/**
 * The account's device list as the nodes see it: a cache (24 h by default, single flight), a
 * name index built once per fetched list, and the rules that turn a door name, a
 * "Location / Name" label or a stored door identity into one Device (docs/doors.md). The list's
 * lifetime and back-off are in list-policy.ts; how names are folded, compared and listed in a
 * message, in names.ts; what a door name or a stored identity must be before a list is fetched,
 * in door-input.ts.
 *
 * Knows nothing of Node-RED or HTTP: the list comes from the `fetchDevices` function given to
 * the constructor, which is expected to validate the raw list already.
 */
import type { Device } from "../spec/schemas.js";
import {
  DEVICE_LIST_TTL_MS,
  DeviceListUnavailableError,
  isRateLimit,
  listRetryDelayMs,
  renewalLimited,
  retryAfterSecOf,
} from "./list-policy.js";
import { MAX_LISTED, levenshtein, listCandidates, normalizeDoorKey, quote, text } from "./names.js";
import { type DoorIdentity, describeIdentity, validateIdentity, validateQuery } from "./door-input.js";

export type { DoorIdentity } from "./door-input.js";

export type Resolution =
  | { ok: true; device: Device }
  | { ok: false; reason: "unknown" | "ambiguous" | "invalid"; message: string; candidates: string[] };

export interface DeviceDirectoryOptions {
  /** How long a fetched list is served from the cache; default 24 h. */
  ttlMs?: number;
  /** Wall clock in ms since epoch, for the list's age (tests). */
  now?: () => number;
  /** Monotonic clock in ms, for the back-off and Retry-After (default performance.now). */
  monotonic?: () => number;
  /**
   * refreshAfterNotFound() does not fetch again when the cached list's fetch started less than
   * this long ago; default 0 (off).
   */
  notFoundRefreshMinAgeMs?: number;
}

/** When the account has at most this many doors, an unknown name lists all of them. */
const LIST_ALL_BELOW = 25;

interface Snapshot {
  devices: Device[];
  fetchedAt: number;
  fetchStartedAt: number;
  byId: Map<number, Device>;
  /** normalized name → devices with that name */
  byName: Map<string, Device[]>;
  /** normalized "location / name" → devices */
  byLabel: Map<string, Device[]>;
}

function push(map: Map<string, Device[]>, key: string, d: Device): void {
  const list = map.get(key);
  if (list) list.push(d);
  else map.set(key, [d]);
}

function buildSnapshot(raw: Device[], fetchStartedAt: number, fetchedAt: number): Snapshot {
  const devices = Object.freeze(raw.slice()) as Device[];
  const byId = new Map<number, Device>();
  const byName = new Map<string, Device[]>();
  const byLabel = new Map<string, Device[]>();
  for (const d of devices) {
    if (typeof d !== "object" || d === null || typeof d.id !== "number") continue;
    if (!byId.has(d.id)) byId.set(d.id, d);
    const name = text(d.name);
    if (name === null) continue; // reachable by id only
    const nameKey = normalizeDoorKey(name);
    push(byName, nameKey, d);
    const loc = text(d.locationName);
    if (loc !== null) push(byLabel, `${normalizeDoorKey(loc)} / ${nameKey}`, d);
  }
  return { devices, fetchedAt, fetchStartedAt, byId, byName, byLabel };
}

export class DeviceDirectory {
  private readonly fetchDevices: () => Promise<Device[]>;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly mono: () => number;
  private readonly notFoundMinAgeMs: number;
  private snapshot: Snapshot | null = null;
  private inflight: Promise<Snapshot> | null = null;
  /** Back-off after failed fetches: consecutive failures, the last error, the next try. */
  private failures = 0;
  private lastError: unknown = null;
  private retryAt = Number.NEGATIVE_INFINITY;
  /** No fetch at all before this, forced or not (the last failure's Retry-After), monotonic. */
  private notBefore = Number.NEGATIVE_INFINITY;
  /**
   * Between two back-off tries, one fetch may still be made when a message needs the list:
   * one per back-off window, so a failing message try does not open a new window for the next.
   */
  private messageTryUsed = false;

  constructor(fetchDevices: () => Promise<Device[]>, options: DeviceDirectoryOptions = {}) {
    if (typeof fetchDevices !== "function") throw new TypeError("fetchDevices must be a function");
    this.fetchDevices = fetchDevices;
    this.ttlMs = options.ttlMs ?? DEVICE_LIST_TTL_MS;
    this.now = options.now ?? Date.now;
    this.mono = options.monotonic ?? (() => performance.now());
    this.notFoundMinAgeMs = options.notFoundRefreshMinAgeMs ?? 0;
  }

  /**
   * The cached list; fetched when there is none, when it is older than the ttl, or on force.
   * Concurrent callers share one fetch (also a forced one). A failed fetch rejects all of its
   * waiters with the fetch's own error and keeps the previous list. The array is frozen.
   */
  async devices(force = false): Promise<Device[]> {
    return (await this.load(force, "wait")).devices;
  }

  /**
   * A forced fetch made with `fetchDevices` instead of the directory's own (the editor's, which
   * must not log in), under the same rules: one fetch in flight (a fetch already under way is
   * joined), no fetch within a Retry-After, one try per back-off window.
   */
  async refreshWith(fetchDevices: () => Promise<Device[]>): Promise<Device[]> {
    return (await this.load(true, "wait", fetchDevices)).devices;
  }

  /**
   * The list of the fetch under way, if one is (nothing new is fetched for the caller). A caller
   * that only looks whether there is one and drops the promise leaves no unhandled rejection.
   */
  inFlight(): Promise<Device[]> | null {
    if (!this.inflight) return null;
    const list = this.inflight.then((s) => s.devices);
    list.catch(() => undefined);
    return list;
  }

  /**
   * When the next fetch after a failure is allowed (ms since epoch), or null when the last
   * fetch succeeded (or none failed yet). The account retries the start-up fetch at this time.
   */
  nextRetryAt(): number | null {
    const inMs = this.retryInMs();
    return inMs === null ? null : this.now() + inMs;
  }

  /**
   * How long until the next fetch after a failure is allowed (ms, ≥ 0), or null as above; also
   * while a rate-limited renewal holds every fetch back (notBefore), which counts as no failure of
   * the list: the start-up fetch waits for it instead of being tried again at once, in a loop.
   */
  retryInMs(): number | null {
    const m = this.mono();
    if (this.failures > 0) return Math.max(0, Math.max(this.retryAt, this.notBefore) - m);
    return this.notBefore > m ? this.notBefore - m : null;
  }

  /**
   * How long until a message may make the list be fetched again (ms, ≥ 0): after the last
   * failure's Retry-After, and, once this back-off window's message try is used, after the
   * window. 0 when nothing holds a fetch back.
   */
  nextTryInMs(): number {
    const at = this.messageTryUsed ? Math.max(this.notBefore, this.retryAt) : this.notBefore;
    return Math.max(0, at - this.mono());
  }

  /** The last good list (null before the first successful fetch) and when it was fetched. */
  cached(): { devices: Device[]; fetchedAt: number } | null {
    return this.snapshot ? { devices: this.snapshot.devices, fetchedAt: this.snapshot.fetchedAt } : null;
  }

  /**
   * Resolves "Name" or "Location / Name" (trimmed, case-insensitive, spaces around "/" and
   * runs of spaces ignored). Invalid input is refused without fetching. Rejects only when the
   * list cannot be fetched.
   */
  async resolveName(query: string, force = false): Promise<Resolution> {
    const invalid = validateQuery(query, "door name");
    if (invalid) return invalid;
    const snap = await this.load(force, "serve-stale");
    const key = normalizeDoorKey(query);
    const matches = unique([...(snap.byName.get(key) ?? []), ...(snap.byLabel.get(key) ?? [])]);
    if (matches.length === 1) return { ok: true, device: matches[0] };
    if (matches.length > 1) return this.ambiguous(snap, quote(query.trim()), matches);
    return this.unknown(snap, `no door named ${quote(query.trim())}`, key);
  }

  /**
   * Resolves a door stored by the editor (id seen when it was picked, plus name and location),
   * by the rules of docs/doors.md#resolution-rules, in order:
   * 1. the stored id is in the list with the stored name → that device;
   * 2. exactly one device has the stored name AND the stored location → that device (the door
   *    got a new id); a stored location is never dropped: a door of the same name at another
   *    location is never taken in its place (without a stored location: the only device of that
   *    name that has no location either);
   * 3. the stored id is in the list → that device (the door was renamed);
   * 4. otherwise the door fails (unknown, or ambiguous with the candidates) and nothing is sent.
   */
  async resolveIdentity(identity: DoorIdentity, force = false): Promise<Resolution> {
    const known = this.found.get(identity);
    const same =
      known !== undefined &&
      known.id === identity.id &&
      known.name === identity.name &&
      known.location === identity.location;
    if (!same) {
      const invalid = validateIdentity(identity);
      if (invalid) return invalid;
    }
    const snap = await this.load(force, "serve-stale");
    // A door node resolves the same identity against the same list message after message: the
    // answer is kept per list (a new list, or other fields in the identity, resolve again).
    if (same && known.snap === snap) return known.resolution;
    const resolution = this.resolveIdentityIn(snap, identity);
    if (resolution.ok)
      this.found.set(identity, { snap, id: identity.id, name: identity.name, location: identity.location, resolution });
    else this.found.delete(identity);
    return resolution;
  }

  /**
   * The last door found for an identity object, with the list and the identity's fields it was
   * found for. Only a door found is kept: a failure's candidates go out on a message, where a
   * flow may change them.
   */
  private readonly found = new WeakMap<
    DoorIdentity,
    { snap: Snapshot; id: number | null; name: string | null; location: string | null; resolution: Resolution }
  >();

  /**
   * After a 404 for a known id (identity.id = the id the request was sent to): re-fetch the
   * list once and resolve the identity against the new list. Concurrent reports share one
   * fetch. No fetch is made when the id is not in the cached list (it was never known, or a
   * re-fetch already dropped it: nothing new to learn, and a stream of 404s for a removed door
   * cannot turn into a stream of list fetches), nor when the cached list was fetched less than
   * `notFoundRefreshMinAgeMs` ago (default 0: off). Rejects when the re-fetch fails.
   */
  async refreshAfterNotFound(identity: DoorIdentity): Promise<Resolution> {
    const invalid = validateIdentity(identity);
    if (invalid) return invalid;
    let snap: Snapshot;
    const cur = this.snapshot;
    if (this.inflight) {
      snap = await this.inflight;
    } else if (!cur) {
      snap = await this.load(false, "wait");
    } else if (identity.id === null || identity.id === undefined || !cur.byId.has(identity.id)) {
      snap = cur;
    } else if (this.notFoundMinAgeMs > 0 && this.now() - cur.fetchStartedAt < this.notFoundMinAgeMs) {
      snap = cur;
    } else {
      snap = await this.load(true, "wait");
    }
    return this.resolveIdentityIn(snap, identity);
  }

  /** "Location / Name" when the name repeats in the list, else "Name", else "#id". */
  label(device: Device): string {
    const snap = this.snapshot;
    const known = this.labels.get(device);
    if (
      known !== undefined &&
      known.snap === snap &&
      known.name === device.name &&
      known.location === device.locationName
    )
      return known.label;
    const name = text(device.name);
    if (name === null) return `#${device.id}`;
    const loc = text(device.locationName);
    const count = snap?.byName.get(normalizeDoorKey(name))?.length ?? 0;
    const label = count > 1 && loc !== null ? `${loc} / ${name}` : name;
    this.labels.set(device, { snap, name: device.name, location: device.locationName, label });
    return label;
  }

  /** Each device's label, for the list it was made with (the label depends on the names in it). */
  private readonly labels = new WeakMap<
    Device,
    { snap: Snapshot | null; name: unknown; location: unknown; label: string }
  >();

  /**
   * `serve-stale` (the unlock and status paths): an expired list is served at once and a new
   * one fetched in the background (docs/doors.md#the-device-list: they never wait for a list
   * fetch when a list, even an expired one, is cached). `wait`: an expired list is fetched first.
   * Without any list, both fetch, within the back-off after a failure (one try per back-off
   * window when a message needs the list; otherwise the last error).
   */
  private load(
    force: boolean,
    mode: "serve-stale" | "wait",
    fetchDevices?: () => Promise<Device[]>,
  ): Promise<Snapshot> {
    const snap = this.snapshot;
    if (!force && snap && this.now() - snap.fetchedAt < this.ttlMs) return Promise.resolve(snap);
    if (!force && snap && mode === "serve-stale") {
      if (!this.inflight && this.mono() >= this.retryAt) this.fetchNow().catch(() => undefined); // background; errors go to the back-off
      return Promise.resolve(snap);
    }
    if (this.inflight) return this.forMessage(this.inflight);
    const m = this.mono();
    if (m < this.notBefore || (m < this.retryAt && this.messageTryUsed)) {
      // Within a Retry-After nothing is fetched, not even on force; within a back-off window
      // the one message try is used up. A list in hand serves; without one the message fails.
      if (snap) return Promise.resolve(snap);
      return Promise.reject(new DeviceListUnavailableError(this.lastError, this.nextTryInMs()));
    }
    if (m < this.retryAt) {
      // A message's try, forced (msg.refresh, a 404's re-fetch) or not: one per back-off window.
      this.messageTryUsed = true;
      return this.forMessage(this.fetchNow(true, fetchDevices));
    }
    return this.forMessage(this.fetchNow(false, fetchDevices));
  }

  /**
   * A fetch a message waits on. When the service rate-limited it, the message learns when the
   * list will be fetched again (which the back-off decides, not the 429 alone):
   * DeviceListUnavailableError with nextTryInMs(). Any other failure is passed on as it is.
   */
  private forMessage(fetch: Promise<Snapshot>): Promise<Snapshot> {
    return fetch.catch((e: unknown) => {
      throw isRateLimit(e) ? new DeviceListUnavailableError(e, this.nextTryInMs()) : e;
    });
  }

  /** Starts the one list fetch (or joins the one in flight). */
  fetchNow(messageTry = false, fetchDevices: () => Promise<Device[]> = this.fetchDevices): Promise<Snapshot> {
    if (this.inflight) return this.inflight;
    const m = this.mono();
    if (m < this.notBefore) return Promise.reject(new DeviceListUnavailableError(this.lastError, this.notBefore - m));
    const run = async (): Promise<Snapshot> => {
      const startedAt = this.now();
      let list: Device[];
      try {
        list = await fetchDevices();
        if (!Array.isArray(list)) throw new TypeError("device list fetch did not return an array");
      } catch (e) {
        this.lastError = e;
        const retryAfterSec = retryAfterSecOf(e); // a 429's Retry-After
        if (renewalLimited(e)) {
          // Nothing was sent for the list: the session's renewal was rate-limited. Its wait is the
          // service's, and the list adds no back-off of its own to it (docs/session.md#rate-limits).
          // A message's try it took is not used up: the list was not asked.
          this.notBefore = Math.max(this.notBefore, this.mono() + retryAfterSec * 1000);
          if (messageTry) this.messageTryUsed = false;
          throw e;
        }
        this.failures++;
        this.retryAt = this.mono() + listRetryDelayMs(this.failures, retryAfterSec);
        this.notBefore = this.mono() + retryAfterSec * 1000;
        // A scheduled try that failed opens a new window with its one message try; a failed
        // message try does not (else every message would make one).
        if (!messageTry) this.messageTryUsed = false;
        throw e;
      }
      const next = buildSnapshot(list, startedAt, this.now());
      this.snapshot = next;
      this.failures = 0;
      this.lastError = null;
      this.retryAt = Number.NEGATIVE_INFINITY;
      this.notBefore = Number.NEGATIVE_INFINITY;
      this.messageTryUsed = false;
      return next;
    };
    // Started from a microtask so that even a fetch function that throws synchronously goes
    // through the same path; the slot is cleared before any waiter resumes.
    const p: Promise<Snapshot> = Promise.resolve()
      .then(run)
      .finally(() => {
        if (this.inflight === p) this.inflight = null;
      });
    this.inflight = p;
    return p;
  }

  private resolveIdentityIn(snap: Snapshot, identity: DoorIdentity): Resolution {
    const byId = identity.id !== null ? snap.byId.get(identity.id) : undefined;
    const name = text(identity.name);
    const nameKey = name !== null ? normalizeDoorKey(name) : null;
    if (byId && nameKey !== null && text(byId.name) !== null && normalizeDoorKey(text(byId.name)!) === nameKey) {
      return { ok: true, device: byId };
    }
    let matches: Device[] = [];
    if (nameKey !== null) {
      const loc = text(identity.location);
      matches =
        loc !== null
          ? (snap.byLabel.get(`${normalizeDoorKey(loc)} / ${nameKey}`) ?? [])
          : (snap.byName.get(nameKey) ?? []).filter((d) => text(d.locationName) === null);
      if (matches.length === 1) return { ok: true, device: matches[0] };
    }
    if (byId) return { ok: true, device: byId };
    const shown = describeIdentity(identity);
    if (matches.length > 1) return this.ambiguous(snap, shown, matches);
    const subject = `door ${shown} is not in the account's device list`;
    const elsewhere = nameKey !== null ? (snap.byName.get(nameKey) ?? []) : [];
    if (elsewhere.length > 0 && text(identity.location) === null) return this.ambiguous(snap, shown, elsewhere);
    if (elsewhere.length > 0) {
      // Same name at another location: named as candidates, never opened in its place.
      const labels = elsewhere.map((d) => `${text(d.locationName) ?? "(no location)"} / ${text(d.name)}`);
      return {
        ok: false,
        reason: "unknown",
        message: `${subject}; a door of that name at another location is not opened in its place: ${listCandidates(labels)} (pick the door again, or use msg.deviceId)`,
        candidates: labels,
      };
    }
    return this.unknown(snap, subject, nameKey ?? "");
  }

  /** `subject` is already quoted, e.g. `"Back Door"` or `"Garage / Back Door" #12`. */
  private ambiguous(snap: Snapshot, subject: string, matches: Device[]): Resolution {
    let labels = matches.map((d) => this.labelIn(snap, d));
    const sameLabels = new Set(labels).size < labels.length;
    if (sameLabels) labels = matches.map((d, i) => `${labels[i]} (#${d.id})`);
    const hint = sameLabels ? "use msg.deviceId" : 'use "Location / Door"';
    return {
      ok: false,
      reason: "ambiguous",
      message: `door ${subject} is ambiguous: ${listCandidates(labels)}; ${hint}`,
      candidates: labels,
    };
  }

  private unknown(snap: Snapshot, subject: string, key: string): Resolution {
    const named = snap.devices.filter((d) => text(d.name) !== null);
    if (named.length === 0) {
      return {
        ok: false,
        reason: "unknown",
        message: `${subject} — the account has no named doors${snap.devices.length ? " (use msg.deviceId)" : ""}`,
        candidates: [],
      };
    }
    const limit = Math.max(4, Math.ceil(key.length / 2) + 1);
    const scored = new Map<string, number>();
    for (const d of named) {
      const label = this.labelIn(snap, d);
      const nameKey = normalizeDoorKey(text(d.name)!);
      const loc = text(d.locationName);
      let score = levenshtein(key, nameKey, limit);
      if (loc !== null) score = Math.min(score, levenshtein(key, `${normalizeDoorKey(loc)} / ${nameKey}`, limit));
      if (key.length > 0 && (nameKey.includes(key) || key.includes(nameKey))) score = Math.min(score, 1);
      const prev = scored.get(label);
      if (prev === undefined || score < prev) scored.set(label, score);
    }
    const ordered = [...scored.entries()].sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]));
    let candidates: string[];
    let message: string;
    if (ordered.length <= LIST_ALL_BELOW) {
      candidates = ordered.map(([label]) => label);
      message = `${subject} — known doors: ${listCandidates(candidates)}`;
    } else {
      candidates = ordered
        .filter(([, s]) => s < limit)
        .slice(0, MAX_LISTED)
        .map(([label]) => label);
      message = candidates.length
        ? `${subject} — closest names: ${listCandidates(candidates)} (of ${ordered.length} doors)`
        : `${subject} — no similar name among ${ordered.length} doors`;
    }
    return { ok: false, reason: "unknown", message, candidates };
  }

  private labelIn(snap: Snapshot, device: Device): string {
    const name = text(device.name);
    if (name === null) return `#${device.id}`;
    const loc = text(device.locationName);
    const count = snap.byName.get(normalizeDoorKey(name))?.length ?? 0;
    return count > 1 && loc !== null ? `${loc} / ${name}` : name;
  }
}

function unique(list: Device[]): Device[] {
  return [...new Set(list)];
}
