// @syncapi/client: the TypeScript client of SyncAPI. Runs wherever `fetch` does; storage comes from a driver
// (`NodeSqliteDriver` in "@syncapi/client/node").
export { SyncClient } from "./client.js";
export type {
    ConflictHandler,
    ConflictOutcome,
    ConflictRecord,
    ConflictResolution,
    ConflictVersions,
    IdentitySignIn,
    OnlineEvents,
    ServerLimits,
    SyncClientEvents,
    SyncClientOptions,
    SyncReport,
} from "./client.js";
export { ErrorCode, idTokenChecks, parseRetryAfter, SyncClientError } from "./errors.js";
export type { ErrorCodeValue, SyncErrorKind } from "./errors.js";
export { HttpAnswer, HttpCore, readCapped, RetryPolicy } from "./http.js";
export type { FetchFunction, RetryPolicyOptions } from "./http.js";
export { canonicalText, jsonEqual } from "./json.js";
export type { JsonObject, JsonValue } from "./json.js";
export { consoleLogger } from "./logger.js";
export type { LogEntry, Logger, LogLevel } from "./logger.js";
export { fieldMerge } from "./merge.js";
export type { FieldMerge } from "./merge.js";
export { ServerModel } from "./model.js";
export type { CollectionKind, ModelCollection, SyncEndpoint } from "./model.js";
export type { FailedOperation, OperationKind, PendingOperation } from "./replica.js";
export { migrations } from "./schema.js";
export { localDigests, parseVerifyAnswer, sha256Hex } from "./verify.js";
export type { ListDigest, VerifyAnswer, VerifyReport } from "./verify.js";
export { documentVisibility, reactNativeAppState } from "./lifecycle.js";
export type { AppStateLike, ReactNativeAppState, VisibilityDocument } from "./lifecycle.js";
export { minimumReconnectMs, reconnectDelay } from "./live.js";
export type { EventStreamEnd } from "./live.js";
export { mediaSha, mediaUrl, MemoryMediaStore } from "./media.js";
export type { FailedUpload, MediaFile, MediaStore } from "./media.js";
export { SpaceSet } from "./spaces.js";
export type { SpaceEvent, SpaceInfo, SpaceInvitation, SpaceMember, SpaceRole, SpaceUpdate } from "./spaces.js";
export { ServerEventParser } from "./sse.js";
export type { ServerEvent } from "./sse.js";
export type { SyncState, SyncStatus } from "./status.js";
export { MemoryTokenStore } from "./session.js";
export type { ClientSession, TokenStore } from "./session.js";
export type { SqlExecutor, SqlRow, SqlValue, StorageDriver } from "./storage/driver.js";
export { ExpoSqliteDriver } from "./storage/expo-sqlite.js";
export type { ExpoSqliteDatabase, ExpoSqliteExecutor } from "./storage/expo-sqlite.js";
export { OpSqliteDriver } from "./storage/op-sqlite.js";
export type { OpSqliteDatabase, OpSqliteResult, OpSqliteTransaction } from "./storage/op-sqlite.js";
export { IndexedDbDriver } from "./storage/indexeddb.js";
export type { IndexedDbOptions } from "./storage/indexeddb.js";
export { MemoryDriver, StatementDriver } from "./storage/statement-driver.js";
export type { TablePersistence } from "./storage/statement-driver.js";
export { compare, Query, typed, TypedClient } from "./query.js";
export type { Comparison, FilterValue, ModelItem } from "./query.js";
