/**
 * Which file an account's audit log may be (CONTRACT.md "Audit log": the package never appends
 * to an existing file that is not one of its audit logs, nor through a symbolic link).
 *
 * `checkAuditPath` runs when the config node starts, before any request: a relative path
 * resolves in Node-RED's user directory, an absolute one is taken as it is; refused are a
 * symbolic link as the final component, an existing non-empty file whose first line is not one
 * of our records, and Node-RED's own files (settings, flows, credentials, the user directory's
 * `.config.*.json`, anything under a `node_modules` folder). The writer repeats the file checks
 * each time it opens the file (src/audit/audit-log.ts), opening with O_NOFOLLOW.
 * Knows nothing of Node-RED beyond the names of its files.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { isTornWrite, parseRecord } from "./reader.js";

export const DEFAULT_AUDIT_FILE = "door-access-audit.jsonl";

/** Open flags of the writer: append, create, and never through a symbolic link (0 where the platform has no O_NOFOLLOW). */
export const OPEN_FLAGS = fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_APPEND | (fs.constants.O_NOFOLLOW ?? 0);

export interface NodeRedFiles {
  userDir: string;
  /** settings.js in use (Node-RED's `settings.settingsFile`); default `<userDir>/settings.js`. */
  settingsFile?: string | null;
  /** Node-RED's `settings.flowFile`; default `flows.json`, relative to the user directory. */
  flowFile?: string | null;
}

export type AuditPathCheck = { ok: true; path: string } | { ok: false; path: string; problem: string };

/** How much of a file's start is read to find its first line. */
const FIRST_LINE_MAX = 64 * 1024;

/** The files of Node-RED itself that an audit path must never name. */
export function nodeRedOwnFiles(files: NodeRedFiles): string[] {
  const userDir = path.resolve(files.userDir);
  // The configured flows file, and the defaults Node-RED falls back to (flows.json, and the
  // flows_<hostname>.json of older installations), each with its _cred file and backups.
  const flowFiles = [files.flowFile || "flows.json", "flows.json", `flows_${os.hostname()}.json`].map((f) => path.resolve(userDir, f));
  const withCreds = flowFiles.flatMap((flowFile) => {
    const ext = path.extname(flowFile);
    return [flowFile, flowFile.slice(0, flowFile.length - ext.length) + "_cred" + (ext || ".json")];
  });
  const backups = withCreds.map((f) => path.join(path.dirname(f), "." + path.basename(f) + ".backup"));
  return [
    path.resolve(userDir, files.settingsFile || "settings.js"),
    path.join(userDir, "settings.js"),
    ...withCreds,
    ...backups,
    path.join(userDir, ".sessions.json"),
    path.join(userDir, "package.json"),
    path.join(userDir, "package-lock.json"),
  ];
}

function sameFile(a: string, b: string): boolean {
  return process.platform === "win32" || process.platform === "darwin" ? a.toLowerCase() === b.toLowerCase() : a === b;
}

/** The path with its directory's symbolic links resolved (as far as it exists): what the file really is. */
export function realTarget(p: string): string {
  let dir = path.dirname(p);
  const tail: string[] = [path.basename(p)];
  for (;;) {
    try {
      return path.join(fs.realpathSync(dir), ...tail);
    } catch {
      const up = path.dirname(dir);
      if (up === dir) return p;
      tail.unshift(path.basename(dir));
      dir = up;
    }
  }
}

/**
 * Why an existing file's content is not one of our audit logs, or null if it is: empty, or its
 * first record comes before any other line but blank ones and lines torn by a crash (read as
 * verify reads them), or it holds nothing but such lines.
 */
export function foreignContent(head: Buffer, size: number): string | null {
  if (size === 0) return null;
  const pieces = head.toString("utf8").split("\n");
  // The last piece is cut by the head's end when the file is longer: it cannot be judged.
  const whole = size <= head.length ? pieces.length : pieces.length - 1;
  for (let i = 0; i < whole; i++) {
    const line = pieces[i];
    if (parseRecord(line)) return null;
    // Read as verify reads it: a blank line is skipped; so is a line torn by a crash (or by a
    // failed write the writer could not cut off again): not JSON (a valid JSON line that is not
    // our record is another program's) and starting like a record, or the start of that start.
    // Such lines are ours only when the file goes on with a record, or ends; anything else in
    // between makes the file another program's.
    if (line.trim().length === 0 || isTornWrite(line)) continue;
    return NOT_OURS;
  }
  return whole === pieces.length ? null : NOT_OURS;
}

const NOT_OURS = "it is an existing file whose first line is not a door-access audit record (the package never appends to a file that is not its own audit log)";

/** The most bytes of blank and NUL-only lines read before a file's first other line. */
const SKIP_MAX = 4 * 1024 * 1024;

/** Bytes of a blank line (verify skips a line that is only these). */
const BLANK = new Set([0x0d, 0x20, 0x09, 0x0b, 0x0c]);

/**
 * Why an open file is not ours to append to, or null: its first line that verify does not skip
 * is judged (foreignContent), however many skipped lines come before it: blank lines, and lines
 * of NUL bytes alone (a torn write a crash left). Reads in chunks from the start; only those
 * lines and one head window are read.
 */
export function judgeOpenFileSync(fd: number): string | null {
  const buf = Buffer.alloc(FIRST_LINE_MAX);
  let pos = 0;
  let lineStart = 0; // the start of the line being scanned
  let kind: "empty" | "blank" | "nul" = "empty";
  scan: for (;;) {
    // A crash leaves at most one batch's worth of NUL bytes: far more than that is not judged.
    if (pos >= SKIP_MAX) return `it begins with more than ${SKIP_MAX / (1024 * 1024)} MiB of blank lines or NUL bytes (not judged as a door-access audit log; the package never appends to a file that is not its own)`;
    const n = fs.readSync(fd, buf, 0, FIRST_LINE_MAX, pos);
    if (n === 0) return null; // empty, or nothing verify reads as a line of ours or another's
    for (let i = 0; i < n; i++) {
      const b = buf[i];
      if (b === 0x0a) {
        lineStart = pos + i + 1;
        kind = "empty";
      } else if (BLANK.has(b) && kind !== "nul") {
        kind = "blank";
      } else if (b === 0 && kind !== "blank") {
        kind = "nul";
      } else {
        break scan; // the line from lineStart is judged
      }
    }
    pos += n;
  }
  const n = fs.readSync(fd, buf, 0, FIRST_LINE_MAX, lineStart);
  // A head shorter than asked for reached the file's end (it may have shrunk since a stat).
  return foreignContent(buf.subarray(0, n), n < FIRST_LINE_MAX ? n : fs.fstatSync(fd).size - lineStart);
}

/**
 * Whether the file at `p` is one the writer may take as its own audit log: a regular file (not a
 * symbolic link, not a folder or a device) that is empty or whose first line is one of our
 * records (judgeOpenFileSync). Size rotation renames and deletes only such files. False when it
 * cannot be read.
 */
export function isOurAuditFileSync(p: string): boolean {
  let fd: number;
  try {
    if (!fs.lstatSync(p).isFile()) return false;
    fd = fs.openSync(p, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0));
  } catch {
    return false;
  }
  try {
    return fs.fstatSync(fd).isFile() && judgeOpenFileSync(fd) === null;
  } catch {
    return false;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Resolves and checks an account's audit path. `configured` empty means the default file in the
 * user directory. Reads only: creates nothing, changes no mode.
 */
export function checkAuditPath(configured: unknown, files: NodeRedFiles): AuditPathCheck {
  const userDir = path.resolve(files.userDir);
  const raw = typeof configured === "string" ? configured.trim() : "";
  const resolved = path.resolve(userDir, raw || DEFAULT_AUDIT_FILE);
  const refuse = (problem: string): AuditPathCheck => ({ ok: false, path: resolved, problem: `audit log ${resolved}: ${problem}` });

  const real = realTarget(resolved);
  for (const p of new Set([resolved, real])) {
    if (p.split(path.sep).includes("node_modules")) return refuse("it is inside a node_modules folder (installed code, not a place for a log)");
  }
  const own = nodeRedOwnFiles(files).flatMap((f) => [f, realTarget(f)]);
  let realUserDir = userDir;
  try {
    realUserDir = fs.realpathSync(userDir);
  } catch {
    /* not there yet */
  }
  for (const p of new Set([resolved, real])) {
    if (own.some((f) => sameFile(f, p))) return refuse("it is one of Node-RED's own files (settings, flows, credentials)");
    const dir = path.dirname(p);
    if ((sameFile(dir, userDir) || sameFile(dir, realUserDir)) && /^\.config\..*\.json$/i.test(path.basename(p))) {
      return refuse("it is one of Node-RED's own files (.config.*.json in the user directory)");
    }
  }

  let st: fs.Stats;
  try {
    st = fs.lstatSync(resolved);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { ok: true, path: resolved };
    return { ok: true, path: resolved }; // unreadable here: the writer reports it when it opens the file
  }
  if (st.isSymbolicLink()) return refuse("it is a symbolic link (the audit log is never written through a link)");
  if (!st.isFile()) return { ok: true, path: resolved }; // a directory etc.: the writer fails and nothing is sent
  if (st.size === 0) return { ok: true, path: resolved };
  let fd: number;
  try {
    fd = fs.openSync(resolved, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0));
  } catch {
    return { ok: true, path: resolved }; // unreadable: the writer reports it
  }
  try {
    const why = judgeOpenFileSync(fd);
    return why ? refuse(why) : { ok: true, path: resolved };
  } finally {
    fs.closeSync(fd);
  }
}
