import GRDB

extension Replica {
    /// Applies a local save at once and queues it, in one transaction. Compression: create+update is one PUT of the
    /// last state; a save after a queued delete is a PUT.
    static func save(_ db: Database, _ collection: ServerModel.Collection, id: String, parent: String, _ body: JSONObject) throws {
        var item = body
        item["id"] = .string(id)
        let text = item.jsonText
        try db.executeCached(
            sql: """
                INSERT INTO items (collection, parent, id, local, sortKey) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (collection, parent, id) DO UPDATE SET local = excluded.local, localDeleted = 0,
                    sortKey = CASE WHEN items.server IS NULL THEN excluded.sortKey ELSE items.sortKey END
                """, arguments: [collection.name.rawValue, parent, id, text, sortKey(collection.sortField, item)])
        try enqueue(db, collection.name, id: id, parent: parent, op: .put, body: text)
    }

    /// Applies a local edit of some fields at once and queues it as a JSON Merge Patch (protocol §2): the server
    /// applies it to what it holds then, so fields this app does not know, or that another device changed meanwhile,
    /// are kept. Folding: patch + patch is one patch (the later value of a field wins); a patch of an item queued for
    /// a PUT, or never pushed, is a PUT of the result.
    static func patch(_ db: Database, _ collection: ServerModel.Collection, id: String, parent: String, _ patch: JSONObject) throws {
        let row = try Row.fetchOne(
            db, sql: "SELECT server, local FROM items WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [collection.name.rawValue, parent, id])
        let server = (row?[0] as String?).flatMap { try? JSONValue.parse($0).objectValue }
        let local = (row?[1] as String?).flatMap { try? JSONValue.parse($0).objectValue }
        var result = (local ?? server ?? [:])
        if let children = collection.children { result[children.rawValue] = nil }
        result["nomore"] = nil
        for (key, value) in patch { result[key] = value }
        let queued = try Row.fetchOne(
            db, sql: "SELECT op, body FROM queue WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [collection.name.rawValue, parent, id])
        let queuedKind = (queued?[0] as String?).flatMap(PendingOperation.Kind.init(rawValue:))
        guard server != nil, queuedKind == nil || queuedKind == .patch else {
            try save(db, collection, id: id, parent: parent, result)
            return
        }
        var merged = (queued?[1] as String?).flatMap { try? JSONValue.parse($0).objectValue } ?? [:]
        for (key, value) in patch { merged[key] = value }
        result["id"] = .string(id)
        try db.executeCached(
            sql: "UPDATE items SET local = ?, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [result.jsonText, collection.name.rawValue, parent, id])
        try enqueue(db, collection.name, id: id, parent: parent, op: .patch, body: merged.jsonText)
    }

    /// Applies a local delete at once and queues it. Compression: create+delete (never pushed) is nothing at all;
    /// update+delete is one DELETE. A creation a push has already read may be on the server: its delete is queued
    /// (the server answers 204 if the creation never landed).
    static func delete(_ db: Database, _ collection: SyncCollection, id: String, parent: String) throws {
        let onServer = try Bool.fetchOne(
            db, sql: "SELECT server IS NOT NULL FROM items WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [collection.rawValue, parent, id])
        let sent = try Bool.fetchOne(
            db, sql: "SELECT sent FROM queue WHERE collection = ? AND parent = ? AND id = ?", arguments: [collection.rawValue, parent, id])
        if onServer == false, sent != true {
            // Created here and never pushed: nothing to tell the server.
            try db.executeCached(
                sql: "DELETE FROM items WHERE collection = ? AND parent = ? AND id = ?", arguments: [collection.rawValue, parent, id])
            try db.executeCached(
                sql: "DELETE FROM queue WHERE collection = ? AND parent = ? AND id = ?", arguments: [collection.rawValue, parent, id])
            return
        }
        try db.executeCached(
            sql: """
                INSERT INTO items (collection, parent, id, localDeleted) VALUES (?, ?, ?, 1)
                ON CONFLICT (collection, parent, id) DO UPDATE SET local = NULL, localDeleted = 1
                """, arguments: [collection.rawValue, parent, id])
        try enqueue(db, collection, id: id, parent: parent, op: .delete, body: nil)
    }

    private static func enqueue(
        _ db: Database, _ collection: SyncCollection, id: String, parent: String, op: PendingOperation.Kind, body: String?
    ) throws {
        try db.executeCached(
            sql: """
                INSERT INTO queue (collection, parent, id, op, body) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (collection, parent, id) DO UPDATE SET op = excluded.op, body = excluded.body, rev = queue.rev + 1
                """, arguments: [collection.rawValue, parent, id, op.rawValue, body])
    }

    /// The queue for a push, every entry marked `sent` in the same transaction.
    /// Whether any write waits to be pushed.
    static func hasQueued(_ db: Database) throws -> Bool {
        try Bool.fetchOne(cached: db, sql: "SELECT EXISTS (SELECT 1 FROM queue)") ?? false
    }

    static func takeForPush(_ db: Database) throws -> [PendingOperation] {
        try db.executeCached(sql: "UPDATE queue SET sent = 1 WHERE sent = 0")
        return try pending(db)
    }

    static func pending(_ db: Database) throws -> [PendingOperation] {
        try Row.fetchAll(db, sql: "SELECT collection, parent, id, op, body, rev FROM queue ORDER BY seq").compactMap { row in
            guard let kind = PendingOperation.Kind(rawValue: row[3]) else { return nil }
            let collection = SyncCollection(rawValue: row[0])
            let parent: String = row[1]
            let body = (row[4] as String?).flatMap { try? JSONValue.parse($0).objectValue }
            return PendingOperation(
                collection: collection, parent: parent.isEmpty ? nil : parent, id: row[2], kind: kind, body: body, revision: row[5])
        }
    }

    static func failed(_ db: Database) throws -> [FailedOperation] {
        try Row.fetchAll(db, sql: "SELECT collection, parent, id, op, body, status, code, detail FROM failed ORDER BY seq").compactMap { row in
            guard let kind = PendingOperation.Kind(rawValue: row[3]) else { return nil }
            let collection = SyncCollection(rawValue: row[0])
            let parent: String = row[1]
            return FailedOperation(
                collection: collection, parent: parent.isEmpty ? nil : parent, id: row[2], kind: kind,
                body: (row[4] as String?).flatMap { try? JSONValue.parse($0).objectValue }, status: row[5], code: ServerErrorCode(rawValue: row[6]),
                detail: row[7])
        }
    }

    /// The server took the write: its answer becomes the item's version, and the entry goes unless an edit came
    /// after the push began.
    static func landed(_ db: Database, _ op: PendingOperation, _ layout: ServerModel.Collection, server: JSONObject?, etag: String?) throws {
        let parent = op.parent ?? ""
        let current = try Int.fetchOne(
            db, sql: "SELECT rev FROM queue WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [op.collection.rawValue, parent, op.id])
        let unchanged = current == op.revision
        if unchanged {
            try db.executeCached(
                sql: "DELETE FROM queue WHERE collection = ? AND parent = ? AND id = ?", arguments: [op.collection.rawValue, parent, op.id])
            try db.executeCached(
                sql: "UPDATE items SET local = NULL, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?",
                arguments: [op.collection.rawValue, parent, op.id])
        }
        if let server {
            try storeServer(db, layout, parent: parent, server, etag: etag)
        } else {
            try removeServer(db, layout, parent: parent, id: op.id)
        }
    }

    /// The server refused the write for good: it moves to the failed list and the local edit is undone.
    static func refused(_ db: Database, _ op: PendingOperation, status: Int, code: String, detail: String) throws {
        let parent = op.parent ?? ""
        try db.executeCached(
            sql: "INSERT INTO failed (collection, parent, id, op, body, status, code, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            arguments: [op.collection.rawValue, parent, op.id, op.kind.rawValue, op.body?.jsonText, status, code, detail])
        try db.executeCached(
            sql: "DELETE FROM queue WHERE collection = ? AND parent = ? AND id = ?", arguments: [op.collection.rawValue, parent, op.id])
        try db.executeCached(
            sql: "UPDATE items SET local = NULL, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [op.collection.rawValue, parent, op.id])
        try db.executeCached(
            sql: "DELETE FROM items WHERE collection = ? AND parent = ? AND id = ? AND server IS NULL",
            arguments: [op.collection.rawValue, parent, op.id])
    }

    /// The server's version of the item and its ETag, as last stored.
    static func base(_ db: Database, _ op: PendingOperation) throws -> (server: JSONObject?, etag: String?) {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT server, etag FROM items WHERE collection = ? AND parent = ? AND id = ?",
                arguments: [op.collection.rawValue, op.parent ?? "", op.id])
        else { return (nil, nil) }
        return ((row[0] as String?).flatMap { try? JSONValue.parse($0).objectValue }, row[1])
    }
}
