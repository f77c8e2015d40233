/**
 * A fresh folder under os.tmpdir() (searched by the leak scan), apart from test/helpers/flow.ts so
 * that a test file that starts no Node-RED can use it and stay in the fast loop
 * (test/helpers/test-scope.ts).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

/** A new empty folder for one test's files (a Node-RED user directory, a token file, an audit log). */
export function freshUserDir(): string {
  return mkdtempSync(path.join(tmpdir(), "door-nr-test-"));
}
