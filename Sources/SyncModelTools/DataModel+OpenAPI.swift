import Foundation
import SyncAPI

/// The OpenAPI document of a model (protocol §12), generated, never copied: the operations every model shares
/// (accounts, media, verify, group, changes, operations; `models/openapi-base.yaml`, embedded in the binary) with the
/// paths and schemas the model's collections make (`OpenAPICollections`). `GET /api/v1/openapi.json` serves it;
/// `syncapi model openapi --yaml --examples docs/api/examples` writes `docs/api/openapi.yaml`, which CI compares.
extension DataModel {
    /// - Parameter examples: golden scenarios (`{"title", "steps": [{"request", "response"}]}`) by name: each is
    ///   listed under `components/examples` and linked from every answer of an operation one of its steps shows.
    public func openAPI(version: String, examples: [(name: String, scenario: JSONValue)] = []) -> JSONValue {
        guard case .object(var document) = Self.openAPIBase else { return Self.openAPIBase }
        let generated = OpenAPICollections(self)
        let names = collections.map { "`\($0.name)`" }.joined(separator: ", ")
        document.update("info") { info in
            info.set("version", .string(version))
            info.set("summary", .string("Delta-sync REST API of the data model \"\(name)\": \(names)."))
            info.set(
                "x-model", ["name": .string(name), "digest": .string(digest)])
        }
        document.update("tags") { tags in
            guard case .array(let base) = tags else { return }
            tags = .array(base + collections.map { ["name": .string($0.name)] })
        }
        document.update("paths") { paths in
            guard case .object(let base) = paths else { return }
            // The model's paths after the accounts', before the shared sync calls (media, verify, group, changes).
            let split = base.firstIndex { $0.key == "/api/v1/media" } ?? base.endIndex
            var merged = Array(base[..<split]) + generated.paths + Array(base[split...])
            if let verify = merged.firstIndex(where: { $0.key == "/api/v1/verify" }) {
                merged[verify].value.update("get") { $0.set("parameters", .array(generated.verifyParameters)) }
            }
            // Every space-scoped path again under `/api/v1/spaces/{spaceId}` (protocol §15), after the unprefixed ones.
            let scoped = Set(generated.paths.map(\.key)).union(Self.spaceScopedBasePaths)
            merged += merged.filter { scoped.contains($0.key) }.map { path, item in
                ("/api/v1/spaces/{spaceId}" + path.dropFirst("/api/v1".count), Self.inSpace(item))
            }
            paths = .object(merged)
        }
        document.update("components") { components in
            components.update("schemas") { schemas in
                guard case .object(let base) = schemas else { return }
                schemas = .object(base + generated.schemas)
            }
        }
        var result = JSONValue.object(document)
        if !examples.isEmpty { result = Self.linking(examples, into: result) }
        return result
    }

    /// The shared paths that address the caller's space, besides the model's own.
    static let spaceScopedBasePaths: Set<String> = ["/api/v1/media", "/api/v1/media/{sha256}", "/api/v1/verify", "/api/v1/changes"]

    /// A path item of the home space as it reads under `/spaces/{spaceId}`: the space's parameter first, operation ids
    /// of their own, and the answer to a space that is not the caller's.
    static func inSpace(_ item: JSONValue) -> JSONValue {
        var item = item
        item.update("parameters") { parameters in
            let own: [JSONValue] = if case .array(let list) = parameters { list } else { [] }
            parameters = .array([["$ref": "#/components/parameters/SpaceIdPath"]] + own)
        }
        guard case .object(let members) = item else { return item }
        item = .object(
            members.map { method, operation in
                guard method != "parameters", case .object = operation else { return (method, operation) }
                var operation = operation
                if let id = operation["operationId"]?.stringValue { operation.set("operationId", .string(id + "InSpace")) }
                // `spaces=all` follows every space: a parameter of the unprefixed `/changes` only.
                operation.update("parameters") { parameters in
                    if case .array(let list) = parameters {
                        parameters = .array(list.filter { $0["$ref"] != .string("#/components/parameters/AllSpaces") })
                    }
                }
                operation.update("responses") { responses in
                    if responses["404"] == nil { responses.set("404", ["$ref": "#/components/responses/NoSuchSpace"]) }
                }
                return (method, operation)
            })
        return item
    }

    /// The golden scenarios of a folder (`docs/api/examples`), by file name without `.json`, in name order.
    public static func scenarios(inFolder folder: String) throws -> [(name: String, scenario: JSONValue)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            let path = (folder as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path) else { throw ModelError("\(path): cannot be read") }
            do {
                return (String(name.dropLast(5)), try JSONParser.parse(Array(data)))
            } catch {
                throw ModelError("\(path): \(error)")
            }
        }
    }

    /// The part of every model's document that no collection changes, parsed once.
    static let openAPIBase: JSONValue = {
        do {
            return try JSONParser.parse(openAPIBaseFile)
        } catch {
            preconditionFailure("the embedded OpenAPI base does not parse: \(error)")
        }
    }()

    /// Lists the scenarios under `components/examples` and links each from the answers its steps show (matched by
    /// path template, method and status), where the answer is written out (not a shared `$ref` response).
    static func linking(_ examples: [(name: String, scenario: JSONValue)], into document: JSONValue) -> JSONValue {
        guard case .object(var top) = document, case .object(var paths)? = document["paths"] else { return document }
        let templates = paths.map(\.key).sorted { literalLength($0) > literalLength($1) }
        for (name, scenario) in examples {
            guard case .array(let steps)? = scenario["steps"] else { continue }
            for step in steps {
                guard let method = step["request"]?["method"]?.stringValue?.lowercased(),
                    let path = step["request"]?["path"]?.stringValue,
                    case .number(let status)? = step["response"]?["status"],
                    let template = templates.first(where: { matches(template: $0, path: path) }),
                    let index = paths.firstIndex(where: { $0.key == template })
                else { continue }
                let code = String(Int(status))
                paths[index].value.update(method == "head" ? "get" : method) { operation in
                    operation.update("responses") { responses in
                        responses.update(code) { response in
                            response.update("content") { content in
                                guard case .object(var types) = content, !types.isEmpty else { return }
                                types[0].value.update("examples") { links in
                                    if case .null = links { links = [:] }
                                    if links[name] == nil { links.append(name, ["$ref": .string("#/components/examples/\(name)")]) }
                                }
                                content = .object(types)
                            }
                        }
                    }
                }
            }
        }
        top.update("paths") { $0 = .object(paths) }
        let listed: [(key: String, value: JSONValue)] = examples.map { name, scenario in
            (
                name,
                [
                    "summary": scenario["title"] ?? .string(name),
                    "description":
                        "Golden scenario pinned by the tests: an ordered list of request/response steps (not a single body of this media type). `<time>`, `<date>`, `<token>` and `<uuid>` are placeholders for server-generated values.",
                    "externalValue": .string("examples/\(name).json"),
                ]
            )
        }
        top.update("components") { $0.set("examples", .object(listed)) }
        return .object(top)
    }

    static func literalLength(_ template: String) -> Int {
        template.split(separator: "/").filter { !$0.hasPrefix("{") }.reduce(0) { $0 + $1.count }
    }

    /// `/api/v1/contacts/{id}` matches `/api/v1/contacts/c1?x=1`: same segments, a `{…}` segment matches any one.
    static func matches(template: String, path: String) -> Bool {
        let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        let a = template.split(separator: "/", omittingEmptySubsequences: false)
        let b = bare.split(separator: "/", omittingEmptySubsequences: false)
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { t, p in (t.hasPrefix("{") && t.hasSuffix("}") && !p.isEmpty) || t == p }
    }
}

extension JSONValue {
    /// Replaces (or appends) the member `key` of an object.
    mutating func set(_ key: String, _ value: JSONValue) {
        guard case .object(var members) = self else { return }
        if let index = members.firstIndex(where: { $0.key == key }) { members[index].value = value } else { members.append((key, value)) }
        self = .object(members)
    }

    /// Appends the member `key` of an object.
    mutating func append(_ key: String, _ value: JSONValue) {
        guard case .object(var members) = self else { return }
        members.append((key, value))
        self = .object(members)
    }

    /// Edits the member `key` of an object in place (`null` when absent; a `null` left there is not added).
    mutating func update(_ key: String, _ edit: (inout JSONValue) -> Void) {
        guard case .object(var members) = self else { return }
        if let index = members.firstIndex(where: { $0.key == key }) {
            edit(&members[index].value)
        } else {
            var value = JSONValue.null
            edit(&value)
            if value != .null { members.append((key, value)) }
        }
        self = .object(members)
    }
}

extension [(key: String, value: JSONValue)] {
    /// Edits the member `key` of an object's member list in place.
    mutating func update(_ key: String, _ edit: (inout JSONValue) -> Void) {
        guard let index = firstIndex(where: { $0.key == key }) else { return }
        edit(&self[index].value)
    }
}
