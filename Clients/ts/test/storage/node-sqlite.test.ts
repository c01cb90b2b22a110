// The driver suite over node:sqlite, the reference the other drivers are held to.
import { NodeSqliteDriver } from "../../src/node.js";
import { driverSuite } from "./suite.js";

driverSuite("node-sqlite", async (path) => NodeSqliteDriver.open(path));
