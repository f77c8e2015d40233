/**
 * Which file an account's audit log may be (docs/security.md#files-the-audit-log-may-never-be:
 * the package never appends to an existing file that is not one of its audit logs, nor through a
 * symbolic link).
 *
 * `checkAuditPath` runs when the config node starts, before any request: a relative path
 * resolves in Node-RED's user directory, an absolute one is taken as it is; refused are a
 * symbolic link as the final component, an existing non-empty file whose first line is not one
 * of our records, and Node-RED's own files and folders (one rule: `nodeRedOwnFile`). The writer
 * repeats the file checks each time it opens the file (src/audit/log-file.ts), opening with
 * O_NOFOLLOW; size rotation renames and deletes only files `isOurAuditFileSync` accepts.
 * Knows nothing of Node-RED beyond the names of its files.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { isTornWrite, parseRecord } from "./record.js";

export const DEFAULT_AUDIT_FILE = "door-access-audit.jsonl";

/** Open flags of the writer: append, create, and never through a symbolic link (0 where the platform has no O_NOFOLLOW). */
export const OPEN_FLAGS =
  fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_APPEND | (fs.constants.O_NOFOLLOW ?? 0);

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

/**
 * Folders of the user directory that are Node-RED's (installed nodes, the library and icons,
 * local nodes and their tarballs, projects and their SSH keys, the file context store, old
 * external modules): nothing under them may be an audit log.
 */
export const NODE_RED_FOLDERS = ["node_modules", "lib", "nodes", "projects", "context", "externalModules"] as const;

/**
 * Files directly in the user directory that are Node-RED's (any case): its settings, the npm
 * project of installed nodes, the editor sessions, the old settings file `.config.json` and the
 * `.config.<section>.json` that replaced it, and every flows file (`flows.json`,
 * `flows_<hostname>.json`, their `_cred` files).
 */
const NODE_RED_NAMES =
  /^(settings\.js|package\.json|package-lock\.json|\.sessions\.json|\.config(\..+)?\.json|flows.*\.json)$/i;

/**
 * The names a file may also have while Node-RED writes it: its backup (`X.backup`, and `.X.backup`
 * for flows files) and the temporary file it writes before a rename (`X.$$$`). Returns `name`
 * and the names it may stand for.
 */
function standsFor(name: string): string[] {
  const out = [name];
  if (name.endsWith(".$$$")) out.push(name.slice(0, -4));
  for (const n of [...out]) {
    if (!/\.backup$/i.test(n)) continue;
    const b = n.slice(0, -".backup".length);
    out.push(b);
    if (b.startsWith(".")) out.push(b.slice(1));
  }
  return out;
}

/**
 * The one rule for which files of Node-RED an audit log may never be
 * (docs/security.md#files-the-audit-log-may-never-be). Why `p` (an absolute path) is one, or
 * null. Judged for the path as given and as it really is (its folders' symbolic links resolved),
 * against the user directory as given and as it really is:
 * - anything inside a `node_modules` folder, wherever it is;
 * - in the user directory: its folders NODE_RED_FOLDERS and all below them;
 * - in any folder (another Node-RED's user directory may be there): the files NODE_RED_NAMES,
 *   each also as a backup or temporary file (standsFor);
 * - wherever they are: the settings file in use, the flows file in use (resolved as Node-RED
 *   resolves it: in the current directory or the user directory) and its `_cred` file, each
 *   also as a backup or temporary file.
 */
export function nodeRedOwnFile(p: string, files: NodeRedFiles): string | null {
  const userDir = path.resolve(files.userDir);
  const userDirs = new Set([userDir, realPath(userDir)]);
  const paths = new Set([path.resolve(p), realTarget(path.resolve(p))]);
  for (const q of paths) {
    if (q.split(path.sep).includes("node_modules"))
      return "it is inside a node_modules folder (installed code, not a place for a log)";
  }
  // The settings and flows files in use, wherever they are.
  const named: string[] = [path.resolve(userDir, files.settingsFile || "settings.js")];
  if (files.flowFile) {
    const flowFiles = path.isAbsolute(files.flowFile)
      ? [files.flowFile]
      : [path.resolve(process.cwd(), files.flowFile), path.resolve(userDir, files.flowFile)];
    for (const f of flowFiles) {
      const ext = path.extname(f);
      const cred = path.basename(f, ext) + "_cred" + ext;
      named.push(f, path.join(path.dirname(f), cred), path.join(userDir, cred));
    }
  }
  const own = new Set(named.flatMap((f) => [f, realTarget(f)]));
  for (const q of paths) {
    const dir = path.dirname(q);
    for (const name of standsFor(path.basename(q))) {
      const candidate = path.join(dir, name);
      if ([...own].some((f) => sameFile(f, candidate)))
        return "it is one of Node-RED's own files (its settings or flows file, or their credentials, backup or temporary file)";
    }
    for (const u of userDirs) {
      const rel = path.relative(u, q);
      if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) continue;
      const parts = rel.split(path.sep);
      const folder = NODE_RED_FOLDERS.find((f) => f.toLowerCase() === parts[0].toLowerCase());
      if (folder) return `it is one of Node-RED's own files (inside ${folder}/ of the user directory)`;
    }
    // The names of a user directory's files, in any folder: another Node-RED on this machine
    // (a second instance, the default ~/.node-red of a runtime started elsewhere) has its user
    // directory there, and its .config.json would cost it its credential secret at its next start.
    if (standsFor(path.basename(q)).some((n) => NODE_RED_NAMES.test(n))) {
      return "it has the name of one of Node-RED's own files in a user directory, this one's or another Node-RED's (settings, flows, credentials, .config.json, .config.*.json, sessions, package files, or a backup or temporary file of one)";
    }
  }
  return null;
}

/** The path with every symbolic link resolved (as far as it exists). */
function realPath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return realTarget(p);
  }
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

const NOT_OURS =
  "it is an existing file whose first line is not a door-access audit record (the package never appends to a file that is not its own audit log)";

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
    if (pos >= SKIP_MAX)
      return `it begins with more than ${SKIP_MAX / (1024 * 1024)} MiB of blank lines or NUL bytes (not judged as a door-access audit log; the package never appends to a file that is not its own)`;
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
  const refuse = (problem: string): AuditPathCheck => ({
    ok: false,
    path: resolved,
    problem: `audit log ${resolved}: ${problem}`,
  });

  const owned = nodeRedOwnFile(resolved, files);
  if (owned) return refuse(owned);

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
