// The driver suite over expo-sqlite's documented asynchronous API (a stand-in over a real SQLite file).
import { dirname } from "node:path";
import { ExpoSqliteDriver } from "../../src/index.js";
import { expoOpenDatabaseAsync } from "./standins.js";
import { driverSuite } from "./suite.js";

driverSuite("expo-sqlite", async (path) => new ExpoSqliteDriver(await expoOpenDatabaseAsync(path.slice(dirname(path).length + 1), {}, dirname(path))));
