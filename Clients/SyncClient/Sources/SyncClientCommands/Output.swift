import Foundation
import SyncClient

/// What the commands print with `--json`: small `Encodable` shapes, keys sorted.
enum Output {
    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "null"
    }

    struct Signed: Encodable { var signedIn: Bool }
    struct Queued: Encodable { var queued: Bool }
    struct More: Encodable { var nomore: Bool }
    struct Done: Encodable { var done: Bool }
    struct ModelCollection: Encodable {
        var name: String
        var kind: String
        var sync: String?
        var parent: String?
    }
    struct Model: Encodable {
        var model: String
        var digest: String
        var collections: [ModelCollection]
    }

    struct Sync: Encodable {
        var pushed: Int
        var failed: Int
        var conflicts: Int
        var date: String?
        var replaced: [String]

        init(_ report: SyncReport) {
            pushed = report.pushed
            failed = report.failed
            conflicts = report.conflicts
            date = report.date
            replaced = report.replaced
        }
    }

    struct Verify: Encodable {
        var checked: [String]
        var repaired: [String]
        var date: String?
    }

    struct Operation: Encodable {
        var op: String
        var collection: String
        var id: String
        var parent: String?
        var status: Int?
        var code: String?
        var detail: String?
    }

    struct Pending: Encodable {
        var pending: [Operation]
        var failed: [Operation]
    }

    struct List: Encodable {
        var count: Int
        var complete: Bool
    }

    struct Status: Encodable {
        var signedIn: Bool
        var state: String
        var date: String?
        var pending: Int
        var failed: Int
        var lists: [String: List]
        var lastError: String?
    }

    static func state(_ state: SyncStatus.State) -> String {
        switch state {
        case .idle: return "idle"
        case .syncing: return "syncing"
        case .offline: return "offline"
        case .error(let why): return "error: \(why)"
        }
    }
}
