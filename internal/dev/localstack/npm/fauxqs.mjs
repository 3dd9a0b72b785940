// Starts the fauxqs SQS emulator on 127.0.0.1 only (its own CLI binds every
// interface). Usage: node fauxqs.mjs PORT
import { buildApp } from "fauxqs";

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  console.error("usage: node fauxqs.mjs PORT");
  process.exit(2);
}
// No host option: queue URLs then use the request's Host header (127.0.0.1:PORT).
const app = buildApp({ logger: false });
await app.listen({ host: "127.0.0.1", port });
console.log(`fauxqs listening on 127.0.0.1:${port}`);
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => app.close().then(() => process.exit(0)));
}
