// The driver suite over op-sqlite's documented API (a stand-in over a real SQLite file).
import { dirname } from "node:path";
import { OpSqliteDriver } from "../../src/index.js";
import { opSqliteOpen } from "./standins.js";
import { driverSuite } from "./suite.js";

driverSuite("op-sqlite", async (path) => new OpSqliteDriver(opSqliteOpen({ name: path.slice(dirname(path).length + 1), location: dirname(path) })));
