/**
 * Writing a file whole or not at all, mode 0600: what the token store, the account's records and
 * the pass books keep on disk (docs/session.md#token-storage, docs/passes.md#where-passes-are-kept).
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";

/** temp file (0600) → write → fsync → rename over the target → fsync the folder. */
export async function writeFileAtomic(filePath: string, content: string): Promise<void> {
  const dir = path.dirname(filePath);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = path.join(dir, `.${path.basename(filePath)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const fh = await fs.open(tmp, "wx", 0o600);
  try {
    await fh.writeFile(content, "utf8");
    await fh.sync();
  } catch (e) {
    await fh.close().catch(() => undefined);
    await fs.rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await fs.rename(tmp, filePath);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
  const dh = await fs.open(dir, "r").catch(() => null);
  if (dh) {
    await dh.sync().catch(() => undefined);
    await dh.close();
  }
}
