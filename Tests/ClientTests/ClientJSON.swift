import SyncClient

/// The SDK's JSON value (the server module has a type of the same name).
typealias ClientJSON = JSONValue
