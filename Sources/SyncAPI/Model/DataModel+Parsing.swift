import Foundation

/// Reading and checking a model file (protocol §12): every problem a server could not serve is an error that names
/// the collection and the field, found before anything is changed. An unknown key anywhere is an error: a typo must
/// never drop a limit.
extension DataModel {
    /// Paths of the API that no collection or sync endpoint may take (§1, §6–§15; the list is §12).
    public static let reservedNames: Set<String> = [
        "signup", "login", "logout", "password", "accounts", "group", "changes", "media", "verify", "model", "openapi.json",
        "health", "ready", "metrics", "spaces", "invitations", "memberships", "token",
    ]
    /// Names the server sets on items; a model may not declare them.
    static let serverNames: Set<String> = ["id", "modified", "author", "created", "nomore"]
    /// §12's defaults where a model is silent.
    static let defaultMaxLength = 256
    static let defaultMaxItems = 100
    static let largestInteger = 9_007_199_254_740_992.0

    /// Parses and checks the bytes of a model file.
    public init(json bytes: [UInt8]) throws(ModelError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw ModelError("the model file is not valid JSON: \(error)")
        }
        try self.init(value)
    }

    /// Reads and checks a model file.
    public init(contentsOf path: String) throws(ModelError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw ModelError("cannot read the model file \(path)") }
        try self.init(json: [UInt8](data))
    }

    public init(_ value: JSONValue) throws(ModelError) {
        // `digest` is what `GET /model` adds: a normalized model read back is the same model.
        let top = try Self.object(value, allowed: ["model", "collections", "digest"], at: "the model file")
        guard case .string(let name)? = top["model"], Self.isName(name) else {
            throw ModelError("\"model\" must be a name of [a-z][A-Za-z0-9]{0,31}")
        }
        guard case .object(let declared)? = top["collections"], !declared.isEmpty else {
            throw ModelError("\"collections\" must be an object of at least one collection")
        }
        var collections: [Collection] = []
        var names = Set<String>()
        for (collectionName, body) in declared {
            guard Self.isName(collectionName) else {
                throw ModelError(collection: collectionName, "a collection name is [a-z][A-Za-z0-9]{0,31}")
            }
            guard !Self.reservedNames.contains(collectionName) else {
                throw ModelError(collection: collectionName, "the name is reserved for a path of the API")
            }
            guard names.insert(collectionName).inserted else { throw ModelError(collection: collectionName, "declared twice") }
            collections.append(try Self.collection(collectionName, body))
        }
        self.name = name
        self.collections = collections
        try checkLinks()
    }

    static func isName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, ("a"..."z").contains(first), text.unicodeScalars.count <= 32 else { return false }
        return text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
    }

    static func object(
        _ value: JSONValue, allowed: Set<String>, at place: @autoclosure () -> String
    ) throws(ModelError)
        -> [String: JSONValue]
    {
        guard case .object(let members) = value else { throw ModelError("\(place()) must be a JSON object") }
        var out: [String: JSONValue] = [:]
        for member in members {
            guard allowed.contains(member.key) else {
                throw ModelError("\(place()): unknown key \"\(member.key)\" (known: \(allowed.sorted().joined(separator: ", ")))")
            }
            guard out.updateValue(member.value, forKey: member.key) == nil else {
                throw ModelError("\(place()): key \"\(member.key)\" given twice")
            }
        }
        return out
    }

    static func collection(_ name: String, _ value: JSONValue) throws(ModelError) -> Collection {
        guard case .string(let kindName)? = value["kind"], let kind = Kind(rawValue: kindName) else {
            throw ModelError(collection: name, "\"kind\" must be list, paginated, child or singleton")
        }
        let allowed: Set<String> =
            switch kind {
            case .list: ["kind", "sync", "fields", "rules", "authored", "access", "scope"]
            case .paginated: ["kind", "sync", "fields", "rules", "authored", "children", "order", "orderField", "filter", "access"]
            case .child: ["kind", "parent", "fields", "rules", "authored", "access"]
            case .singleton: ["kind", "sync", "scope", "fields", "rules", "access"]
            }
        let members = try object(value, allowed: allowed, at: "collection \"\(name)\" (\(kindName))")
        func string(_ key: String) throws(ModelError) -> String? {
            guard let value = members[key] else { return nil }
            guard case .string(let text) = value, !text.isEmpty else { throw ModelError(collection: name, "\"\(key)\" must be a string") }
            return text
        }
        var authored = false
        if let value = members["authored"] {
            guard case .bool(let flag) = value else { throw ModelError(collection: name, "\"authored\" must be true or false") }
            authored = flag
        }
        let sync = try string("sync")
        if let sync {
            guard isName(sync), !reservedNames.contains(sync) else {
                throw ModelError(collection: name, "sync endpoint \"\(sync)\" must be a name of [a-z][A-Za-z0-9]{0,31}, not a reserved path")
            }
        } else if kind != .child {
            throw ModelError(collection: name, "a \(kindName) collection needs \"sync\", the endpoint that syncs it")
        }
        let order = try string("order")
        let orderField = try string("orderField")
        let scope = try string("scope")
        switch kind {
        case .paginated:
            guard order == "created" || order == "lastChildCreated" else {
                throw ModelError(collection: name, "\"order\" must be created or lastChildCreated")
            }
            guard (order == "lastChildCreated") == (orderField != nil) else {
                throw ModelError(collection: name, "\"orderField\" names the server-set field of order lastChildCreated, and only of it")
            }
            if let orderField, !isName(orderField) { throw ModelError(collection: name, field: orderField, "not a valid field name") }
        case .singleton:
            guard scope == "family" || scope == "account" else { throw ModelError(collection: name, "\"scope\" must be family or account") }
        case .child:
            guard try string("parent") != nil else { throw ModelError(collection: name, "a child collection needs \"parent\"") }
        case .list:
            guard scope == nil || scope == "account" else {
                throw ModelError(collection: name, "a list's \"scope\" is account (each account's own items) or absent (the space's)")
            }
        }
        guard case .object(let declaredFields)? = members["fields"] ?? .object([]) else {
            throw ModelError(collection: name, "\"fields\" must be an object")
        }
        var fields: [Field] = []
        var seen = Set<String>()
        let children = try string("children")
        let taken = serverNames.union([orderField, children].compactMap { $0 })
        for (fieldName, body) in declaredFields {
            guard isName(fieldName) else { throw ModelError(collection: name, field: fieldName, "a field name is [a-z][A-Za-z0-9]{0,31}") }
            guard !taken.contains(fieldName) else { throw ModelError(collection: name, field: fieldName, "the server sets this name") }
            guard seen.insert(fieldName).inserted else { throw ModelError(collection: name, field: fieldName, "declared twice") }
            fields.append(try field(fieldName, body, in: name))
        }
        let filter = try string("filter")
        if let filter {
            guard let field = fields.first(where: { $0.name == filter }), case .string(_, _?, _) = field.type else {
                throw ModelError(collection: name, field: filter, "the filter must name a string field with an enum")
            }
        }
        var rules: [Rule] = []
        if let value = members["rules"] {
            guard case .array(let list) = value else { throw ModelError(collection: name, "\"rules\" must be a list") }
            for rule in list { rules.append(try self.rule(rule, in: name, fields: fields)) }
        }
        return Collection(
            name: name, kind: kind, sync: sync, fields: fields, rules: rules, authored: authored, children: children, order: order,
            orderField: orderField, filter: filter, parent: try string("parent"), scope: scope,
            access: try access(members["access"], collection: name, authored: authored, accountScoped: scope == "account"))
    }

    /// `"access": {"read": ROLE, "write": ROLE | "author"}` (protocol §15), each optional (reader, member).
    static func access(_ value: JSONValue?, collection: String, authored: Bool, accountScoped: Bool) throws(ModelError) -> Access? {
        guard let value else { return nil }
        guard !accountScoped else { throw ModelError(collection: collection, "an account-scoped singleton is its account's own: no \"access\"") }
        let members = try object(value, allowed: ["read", "write"], at: "\"access\" of collection \"\(collection)\"")
        let roles = SpaceRole.allCases.map(\.rawValue)
        func role(_ key: String, default fallback: String, also: [String]) throws(ModelError) -> String {
            guard let given = members[key] else { return fallback }
            guard case .string(let name) = given, (roles + also).contains(name) else {
                throw ModelError(collection: collection, "access \"\(key)\" must be one of \((roles + also).joined(separator: ", "))")
            }
            return name
        }
        let access = Access(read: try role("read", default: "reader", also: []), write: try role("write", default: "member", also: ["author"]))
        if access.write == "author", !authored {
            throw ModelError(collection: collection, "write \"author\" needs \"authored\": true (the server records each item's author)")
        }
        return access
    }

    static func field(_ name: String, _ value: JSONValue, in collection: String) throws(ModelError) -> Field {
        guard case .string(let typeName)? = value["type"] else {
            throw ModelError(collection: collection, field: name, "\"type\" must be string, integer, number, boolean or array")
        }
        let common: Set<String> = ["type", "required", "default"]
        let allowed: Set<String> =
            switch typeName {
            case "string": common.union(["maxLength", "enum", "format"])
            case "integer", "number": common.union(["minimum", "maximum"])
            case "boolean": common
            case "array": common.union(["items", "maxItems"])
            default: throw ModelError(collection: collection, field: name, "unknown type \"\(typeName)\"")
            }
        let members = try object(value, allowed: allowed, at: "collection \"\(collection)\", field \"\(name)\"")
        let kind = try self.kind(typeName, members, collection: collection, field: name)
        var required = false
        if let value = members["required"] {
            guard case .bool(let flag) = value else { throw ModelError(collection: collection, field: name, "\"required\" must be true or false") }
            required = flag
        }
        let defaultValue = members["default"]
        if let defaultValue {
            guard !required else { throw ModelError(collection: collection, field: name, "\"required\" and \"default\" cannot go together") }
            do {
                _ = try ItemSchema.validate(defaultValue, as: FieldSpec(name, fieldType(kind)))
            } catch {
                throw ModelError(collection: collection, field: name, "the default is outside the field's own limits")
            }
        }
        return Field(name: name, type: kind, required: required, defaultValue: defaultValue)
    }

    static func kind(_ typeName: String, _ members: [String: JSONValue], collection: String, field: String) throws(ModelError) -> FieldKind {
        func count(_ key: String, default value: Int, range: ClosedRange<Int>) throws(ModelError) -> Int {
            guard let given = members[key] else { return value }
            guard case .number(let n) = given, n == n.rounded(), range.contains(Int(exactly: n) ?? -1) else {
                throw ModelError(
                    collection: collection, field: field, "\"\(key)\" must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return Int(n)
        }
        func bound(_ key: String, default value: Double, whole: Bool) throws(ModelError) -> Double {
            guard let given = members[key] else { return value }
            guard case .number(let n) = given, abs(n) <= largestInteger, !whole || n == n.rounded() else {
                throw ModelError(collection: collection, field: field, "\"\(key)\" must be a \(whole ? "whole " : "")number within ±2^53")
            }
            return n
        }
        switch typeName {
        case "string":
            let maxLength = try count("maxLength", default: defaultMaxLength, range: 1...1_000_000)
            var choices: [String]?
            if let value = members["enum"] {
                guard case .array(let list) = value, !list.isEmpty else {
                    throw ModelError(collection: collection, field: field, "\"enum\" must be a list of strings")
                }
                var strings: [String] = []
                for item in list {
                    guard case .string(let s) = item, !s.isEmpty, !strings.contains(s) else {
                        throw ModelError(collection: collection, field: field, "\"enum\" must hold distinct, non-empty strings")
                    }
                    strings.append(s)
                }
                choices = strings
            }
            var format: String?
            if let value = members["format"] {
                guard case .string(let f) = value, ["date", "date-time", "uri", "reference"].contains(f) else {
                    throw ModelError(collection: collection, field: field, "\"format\" must be date, date-time, uri or reference")
                }
                guard choices == nil else { throw ModelError(collection: collection, field: field, "\"enum\" and \"format\" cannot go together") }
                format = f
            }
            return .string(maxLength: maxLength, choices: choices, format: format)
        case "integer", "number":
            let whole = typeName == "integer"
            let minimum = try bound("minimum", default: -largestInteger, whole: whole)
            let maximum = try bound("maximum", default: largestInteger, whole: whole)
            guard minimum <= maximum else { throw ModelError(collection: collection, field: field, "\"minimum\" is above \"maximum\"") }
            return whole ? .integer(minimum: minimum, maximum: maximum) : .number(minimum: minimum, maximum: maximum)
        case "boolean":
            return .boolean
        default:
            guard let itemsValue = members["items"] else {
                throw ModelError(collection: collection, field: field, "an array needs \"items\", a string field")
            }
            guard case .string? = itemsValue["type"] else {
                throw ModelError(collection: collection, field: field, "\"items\" must be a string field")
            }
            let items = try object(
                itemsValue, allowed: ["type", "maxLength", "enum", "format"], at: "collection \"\(collection)\", field \"\(field)\", items")
            guard items["type"] == .string("string") else {
                throw ModelError(collection: collection, field: field, "arrays hold strings only")
            }
            let itemKind = try kind("string", items, collection: collection, field: field)
            return .array(items: itemKind, maxItems: try count("maxItems", default: defaultMaxItems, range: 1...10_000))
        }
    }

    static func rule(_ value: JSONValue, in collection: String, fields: [Field]) throws(ModelError) -> Rule {
        let members = try object(value, allowed: ["requireOneOf", "notBefore"], at: "collection \"\(collection)\", a rule")
        guard members.count == 1, case .array(let list)? = members.first?.value else {
            throw ModelError(collection: collection, "a rule is {\"requireOneOf\": [fields]} or {\"notBefore\": [later, earlier]}")
        }
        var names: [String] = []
        for item in list {
            guard case .string(let name) = item, let field = fields.first(where: { $0.name == name }) else {
                throw ModelError(collection: collection, "a rule names a field the collection does not declare: \(item)")
            }
            if members["notBefore"] != nil {
                guard case .string(_, _, let format) = field.type, format == "date" || format == "date-time" else {
                    throw ModelError(collection: collection, field: name, "notBefore compares dates or date-times only")
                }
            }
            names.append(name)
        }
        if members["notBefore"] != nil {
            guard names.count == 2 else { throw ModelError(collection: collection, "notBefore names two fields: [later, earlier]") }
            return .notBefore(later: names[0], earlier: names[1])
        }
        guard names.count >= 2 else { throw ModelError(collection: collection, "requireOneOf names at least two fields") }
        return .requireOneOf(names)
    }

    /// What one collection says of another: children and parents agree, sync endpoints are shared only as §12 allows.
    func checkLinks() throws(ModelError) {
        var syncs: [String: [Collection]] = [:]
        for collection in collections {
            if let sync = collection.sync {
                guard self.collection(sync) == nil else {
                    throw ModelError(collection: collection.name, "sync endpoint \"\(sync)\" is also a collection's name")
                }
                syncs[sync, default: []].append(collection)
            }
            switch collection.kind {
            case .child:
                guard let parent = collection.parent.flatMap(self.collection), parent.kind == .paginated else {
                    throw ModelError(collection: collection.name, "\"parent\" must name a paginated collection")
                }
                guard parent.children == collection.name else {
                    throw ModelError(collection: collection.name, "its parent \"\(parent.name)\" must name it as its \"children\"")
                }
            case .paginated:
                if let children = collection.children {
                    guard let child = self.collection(children), child.kind == .child, child.parent == collection.name else {
                        throw ModelError(collection: collection.name, "\"children\" must name a child collection whose parent is this one")
                    }
                }
            default:
                break
            }
        }
        // Singletons always exist: signup creates them, so they may require nothing it cannot give (the family's
        // name, for a family-scoped one).
        for collection in collections where collection.kind == .singleton {
            let given: Set<String> = collection.scope == "family" ? ["name"] : []
            if let field = collection.fields.first(where: { $0.required && !given.contains($0.name) }) {
                throw ModelError(
                    collection: collection.name, field: field.name,
                    "a singleton exists from signup on, so it may require nothing\(given.isEmpty ? "" : " but name")")
            }
        }
        guard collections.filter({ $0.kind == .singleton && $0.scope == "family" }).count <= 1,
            collections.filter({ $0.kind == .singleton && $0.scope == "account" }).count <= 1
        else { throw ModelError("a model has at most one singleton of each scope (family, account)") }
        for (sync, members) in syncs where members.count > 1 {
            // Shared endpoints answer as §5: singletons and lists together, never a paginated list.
            guard members.allSatisfy({ $0.kind == .singleton || $0.kind == .list }), members.contains(where: { $0.kind == .singleton }) else {
                throw ModelError(
                    collection: members[1].name, "sync endpoint \"\(sync)\" is shared: only singletons (with lists) share one")
            }
            guard members.filter({ $0.scope == "family" }).count <= 1, members.filter({ $0.scope == "account" }).count <= 1 else {
                throw ModelError(collection: members[1].name, "sync endpoint \"\(sync)\" carries at most one singleton of each scope")
            }
        }
    }
}
