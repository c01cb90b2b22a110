import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SyncAPI

/// A golden example of `docs/api/examples/`: a sequence of requests and the exact answers they must get.
///
/// The same files are the API's documented examples. Volatile values are normalised before comparing:
/// dates of sync to `<date>`, UUIDs to `<uuid>`, tokens to `<token>`, server times to `<time>`.
/// In requests (paths, headers, bodies), `{token}` is the signed-up user's token, `{date}` the last date of sync
/// answered and `{NAME}` a value saved by a step's `"save": "NAME"` (that step's date of sync) or `"keep": {"NAME":
/// "member"}` (a member of its answer; `N.member` in the array's element N). A request's `"as": "NAME"` sends the
/// token kept as NAME instead of the signed-up user's (a second account signed up by a step).
struct GoldenScenario {
    let file: String
    let json: JSONValue

    static var examplesFolder: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/api/examples")
    }

    static func all() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: examplesFolder.path).filter { $0.hasSuffix(".json") }.sorted()
    }

    init(file: String) throws {
        self.file = file
        let data = try Data(contentsOf: Self.examplesFolder.appendingPathComponent(file))
        self.json = try JSONParser.parse(Array(data))
    }

    /// Runs every step; returns the mismatches (empty when the server answers exactly as documented).
    /// With `update`, rewrites the file with the actual answers instead.
    func run(_ client: any TestClientProtocol, update: Bool) async throws -> [String] {
        var api = APIClient(client: client)
        if json["signup"] != .bool(false) { api = try await APIClient.signedUp(client) }
        var variables: [String: String] = ["token": api.token ?? ""]
        guard case .array(let steps)? = json["steps"] else { throw TestFailure("\(file): no steps") }
        var problems: [String] = []
        var updatedSteps: [JSONValue] = []
        for (index, step) in steps.enumerated() {
            guard let request = step["request"], let method = request["method"]?.stringValue,
                let path = request["path"]?.stringValue
            else { throw TestFailure("\(file) step \(index): bad request") }
            var headers: HTTPFields = [:]
            if case .object(let members)? = request["headers"] {
                for member in members {
                    if let name = HTTPField.Name(member.key), let value = member.value.stringValue {
                        headers[name] = Self.substitute(value, variables)
                    }
                }
            }
            var caller = api
            if request["auth"] == .bool(false) { caller.token = nil }
            if let name = request["as"]?.stringValue { caller.token = variables[name] }
            let body: String? = request["body"].map { value in
                if case .string(let raw) = value, request["rawBody"] == .bool(true) { return raw }
                return Self.substitute(JSONWriter.encode(value), variables)
            }
            // A binary body (media) is given as base64 in `bodyBase64`, and a binary answer is shown by its size only.
            let bytes = request["bodyBase64"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map { Array($0) }
            let answer = try await caller.call(
                HTTPRequest.Method(rawValue: method)!, Self.substitute(path, variables), body: bytes == nil ? body : nil, bytes: bytes,
                headers: headers)
            let binary = answer.headers[.contentType].map { !$0.contains("json") && !$0.hasPrefix("text/") } ?? false
            let actualBody: JSONValue =
                answer.body.isEmpty
                ? .null : binary ? .string("<\(answer.byteCount) bytes>") : (try? JSONParser.parse(answer.body)) ?? .string(answer.body)
            if case .string(let date)? = actualBody["date"] {
                variables["date"] = date
                if let name = step["save"]?.stringValue { variables[name] = date }
            }
            if case .object(let kept)? = step["keep"] {
                for (name, member) in kept {
                    guard let member = member.stringValue else { continue }
                    let parts = member.split(separator: ".", maxSplits: 1).map(String.init)
                    var holder: JSONValue? = actualBody
                    if parts.count == 2, let n = Int(parts[0]) {
                        holder = if case .array(let elements) = actualBody, n < elements.count { elements[n] } else { nil }
                    }
                    if let value = holder?[parts.last!]?.stringValue { variables[name] = value }
                }
            }
            if method == "POST", path.hasSuffix("/login") || path.hasSuffix("/signup"), let token = actualBody["token"]?.stringValue,
                step["useToken"] == .bool(true)
            {
                api.token = token
                variables["token"] = token
            }
            problems += SecretScan.findings(
                in: actualBody, at: "\(file) step \(index) (\(method) \(path))", grantsToken: path.hasSuffix("/login") || path.hasSuffix("/signup"))
            let normalizedBody = Self.normalize(actualBody, key: nil)
            var actualHeaders: [(key: String, value: JSONValue)] = []
            if case .object(let expectedHeaders)? = step["response"]?["headers"] {
                for member in expectedHeaders {
                    let value = HTTPField.Name(member.key).flatMap { answer.headers[$0] }
                    actualHeaders.append((member.key, value.map { Self.normalize(.string($0), key: nil) } ?? .null))
                }
            }
            var actualResponse: [(key: String, value: JSONValue)] = [("status", .number(Double(answer.status.code)))]
            if !actualHeaders.isEmpty { actualResponse.append(("headers", .object(actualHeaders))) }
            actualResponse.append(("body", normalizedBody))
            let expected = step["response"] ?? .null
            if JSONWriter.encode(.object(actualResponse)) != JSONWriter.encode(expected) {
                problems.append(
                    "\(file) step \(index) (\(method) \(path)):\n  expected \(JSONWriter.encode(expected))\n  actual   \(JSONWriter.encode(.object(actualResponse)))"
                )
            }
            if case .object(var members) = step {
                members = members.map { $0.key == "response" ? ("response", .object(actualResponse)) : $0 }
                updatedSteps.append(.object(members))
            }
        }
        if update, case .object(var members) = json {
            members = members.map { $0.key == "steps" ? ("steps", .array(updatedSteps)) : $0 }
            let text = PrettyJSON.format(.object(members)) + "\n"
            try text.write(to: Self.examplesFolder.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        return problems
    }

    static func substitute(_ text: String, _ variables: [String: String]) -> String {
        var out = text
        for (name, value) in variables { out = out.replacingOccurrences(of: "{\(name)}", with: value) }
        return out
    }

    static let timeKeys: Set<String> = ["modified", "created", "expiresAt", "lastMessageAt"]

    /// Replaces values that differ between runs with stable placeholders.
    static func normalize(_ value: JSONValue, key: String?) -> JSONValue {
        switch value {
        case .object(let members): return .object(members.map { ($0.key, normalize($0.value, key: $0.key)) })
        case .array(let elements): return .array(elements.map { normalize($0, key: nil) })
        case .string(let s):
            if key == "token" { return .string("<token>") }
            if key == "code", s.count >= 40 { return .string("<code>") }  // an invitation code, not an error code
            if let key, timeKeys.contains(key), Timestamp.parseDateTime(s) != nil { return .string("<time>") }
            let unquoted = s.hasPrefix("\"") && s.hasSuffix("\"") && s.count >= 2 ? String(s.dropFirst().dropLast()) : s
            let quote = unquoted == s ? "" : "\""
            if isDateOfSync(unquoted) { return .string("\(quote)<date>\(quote)") }
            if isUUID(unquoted) { return .string("\(quote)<uuid>\(quote)") }
            return value
        default: return value
        }
    }

    static func isUUID(_ s: String) -> Bool {
        s.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", options: .regularExpression) != nil
    }

    static func isDateOfSync(_ s: String) -> Bool {
        s.range(of: "^[0-9a-f]{16}\\.[0-9a-f-]{36}\\.[0-9]+$", options: .regularExpression) != nil
    }
}

/// Indented JSON for the golden files people read.
enum PrettyJSON {
    static func format(_ value: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .object(let members) where !members.isEmpty:
            let lines = members.map { inner + JSONWriter.encode(.string($0.key)) + ": " + format($0.value, indent: inner) }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let elements) where !elements.isEmpty && elements.contains(where: Self.isContainer):
            return "[\n" + elements.map { inner + format($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        default:
            return JSONWriter.encode(value)
        }
    }

    static func isContainer(_ value: JSONValue) -> Bool {
        switch value {
        case .object, .array: return true
        default: return false
        }
    }
}

/// Looks for secrets in an answer: password or hash fields, bcrypt hashes, SHA-256 digests, tokens outside the answers
/// that grant them.
enum SecretScan {
    static let secretKeys = ["password", "hash", "salt", "secret", "credential"]
    /// Keys whose 64-hex values are public digests, not secrets.
    static let publicDigests: Set<String> = ["sha256", "modelDigest"]

    static func findings(in value: JSONValue, at place: String, grantsToken: Bool) -> [String] {
        var out: [String] = []
        func walk(_ value: JSONValue, key: String?) {
            switch value {
            case .object(let members):
                for member in members {
                    let lower = member.key.lowercased()
                    if secretKeys.contains(where: lower.contains) || (lower.contains("token") && !grantsToken) {
                        out.append("\(place): secret-looking field \"\(member.key)\"")
                    }
                    walk(member.value, key: member.key)
                }
            case .array(let elements): elements.forEach { walk($0, key: key) }
            case .string(let s):
                if s.hasPrefix("$2a$") || s.hasPrefix("$2b$") || s.hasPrefix("$2y$")
                    || (!Self.publicDigests.contains(key ?? "") && s.range(of: "^[0-9a-f]{64}$", options: .regularExpression) != nil)
                {
                    // A media name is the public SHA-256 of the bytes (protocol §10), a model's digest that of the
                    // public model (§12); any other bare hash could be a token's.
                    out.append("\(place): secret-looking value in \"\(key ?? "")\"")
                }
            default: break
            }
        }
        walk(value, key: nil)
        return out
    }
}
