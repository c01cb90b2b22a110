import Foundation
import GRDB

extension SyncClient {
    /// The URL of a path under `/api/v1` (in the client's space, for a path of a space, unless not `prefixed`).
    func url(_ path: String, prefixed: Bool = true) -> URL {
        var base = configuration.serverURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + "/api/v1" + Self.inSpace(path, prefixed ? configuration.space : nil))!
    }

    /// The account-level paths: everything else addresses a space (protocol §15).
    static let accountPaths: Set<Substring> = ["", "signup", "login", "logout", "password", "accounts", "spaces", "invitations", "model", "group"]

    /// `path` (under `/api/v1`) in `space`: `/spaces/{space}` before a path of a space; account-level paths as they are.
    static func inSpace(_ path: String, _ space: String?) -> String {
        guard let space else { return path }
        let first = path.dropFirst().prefix { $0 != "/" && $0 != "?" }
        guard !accountPaths.contains(first) else { return path }
        return "/spaces/\(space.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? space)" + path
    }

    /// A sub-request's URL (`/api/v1/...`) in the client's space.
    func inSpace(_ request: SubRequest) -> SubRequest {
        guard configuration.space != nil, request.url.hasPrefix("/api/v1/") else { return request }
        var request = request
        request.url = "/api/v1" + Self.inSpace(String(request.url.dropFirst("/api/v1".count)), configuration.space)
        return request
    }

    /// One call to the server; a transport failure is `offline`.
    func call(
        _ method: String, _ path: String, body: JSONValue? = nil, headers: [String: String] = [:], auth: Bool = true
    ) async throws
        -> HTTPAnswer
    {
        try await deliver(try httpCall(method, path, body: body, headers: headers, auth: auth), auth: auth)
    }

    /// Sends a prepared call (JSON or raw bytes): a transport failure is `offline`, a 401 on an authenticated call
    /// ends the session. The answer is read up to `answerMaxBytes` (the transport is asked to stop there; an answer
    /// over it from a transport that read it anyway fails the same way: `answer_too_large`).
    func deliver(_ request: HTTPCall, auth: Bool = true) async throws -> HTTPAnswer {
        var request = request
        let limit = configuration.answerMaxBytes
        request.maximumAnswerBytes = min(request.maximumAnswerBytes ?? limit, limit)
        let answer: HTTPAnswer
        do {
            answer = try await configuration.transport.send(request)
        } catch let error as SyncClientError {
            throw error
        } catch {
            throw SyncClientError.offline("\(error.localizedDescription)")
        }
        guard answer.body.count <= limit else { throw SyncClientError.answerTooLarge(status: answer.status, limit: limit) }
        if auth, answer.status == 401 {
            sessionEnded()
            throw SyncClientError.notSignedIn
        }
        return answer
    }

    /// The HTTP call for `call` and `download`: the token, the JSON body.
    private func httpCall(_ method: String, _ path: String, body: JSONValue?, headers: [String: String], auth: Bool) throws -> HTTPCall {
        var headers = headers
        if auth {
            guard let token = session.withLock({ $0?.token }) else { throw SyncClientError.notSignedIn }
            headers["Authorization"] = "Bearer \(token)"
        }
        var data: Data?
        if let body {
            data = Data(body.text.utf8)
            headers["Content-Type"] = "application/json"
        }
        headers["Accept"] = headers["Accept"] ?? "application/json"
        return HTTPCall(method: method, url: url(path), headers: headers, body: data)
    }

    /// A call whose 200 answer is read as it arrives (`HTTPTransport.download`): its body as a stream of pieces, for the
    /// caller to store as they come (`AnswerSpool`). Any other answer is read whole, up to `answerMaxBytes`, and thrown
    /// as its error (401: the session is gone). A transport failure is `offline`.
    func download(_ method: String, _ path: String, body: JSONValue? = nil) async throws -> AsyncThrowingStream<Data, any Error> {
        let request = try httpCall(method, path, body: body, headers: [:], auth: true)
        do {
            let answer = try await configuration.transport.download(request)
            guard answer.status == 200 else {
                let whole = try await answer.collected(limit: configuration.answerMaxBytes)
                if whole.status == 401 { sessionEnded() }
                throw whole.status == 401 ? SyncClientError.notSignedIn : SyncClientError.from(whole)
            }
            return answer.body
        } catch let error as SyncClientError {
            throw error
        } catch {
            throw SyncClientError.offline("\(error.localizedDescription)")
        }
    }

    /// One `POST /group`; its sub-responses by id. A 401 anywhere means the session is gone.
    func group(_ requests: [SubRequest]) async throws -> [String: SubResponse] {
        let body = try JSONValue(encoding: GroupRequest(requests: requests.map(inSpace)))
        let answer = try await call("POST", "/group", body: body)
        guard answer.status == 200 else { throw SyncClientError.from(answer) }
        let group: GroupAnswer
        do {
            group = try JSONDecoder().decode(GroupAnswer.self, from: answer.body)
        } catch {
            throw SyncClientError.server(status: 200, code: .invalidAnswer, detail: "the group answer does not decode: \(error)")
        }
        var out: [String: SubResponse] = [:]
        for response in group.responses {
            if response.status == 401 {
                sessionEnded()
                throw SyncClientError.notSignedIn
            }
            out[response.id] = response
        }
        return out
    }

    /// The server's limits (`GET /api/v1/`), kept in the replica and read again when `refresh` says so: at sign-in,
    /// when a group is refused for its size (413, `invalid_group`: an operator lowered `--group-max-requests` or
    /// `--body-max-bytes`), and when the server's model changed (which drops the kept ones). A logout or `reset()`
    /// forgets them.
    func limits(refresh: Bool = false) async throws -> ServerDescription.Limits {
        if !refresh, let stored = try await replica.pool.read({ db in try Replica.meta(db, MetaKey.limits) }),
            let limits = try? JSONDecoder().decode(ServerDescription.Limits.self, from: Data(stored.utf8))
        {
            return limits
        }
        let answer = try await call("GET", "/", auth: false)
        guard answer.status == 200 else { throw SyncClientError.from(answer) }
        let description: ServerDescription
        do {
            description = try JSONDecoder().decode(ServerDescription.self, from: answer.body)
        } catch {
            throw SyncClientError.invalidAnswer("the server's description does not decode: \(error)")
        }
        let text = try JSONValue(encoding: description.limits).text
        try await replica.pool.write { db in try Replica.setMeta(db, MetaKey.limits, text) }
        return description.limits
    }

    /// A query value, percent-encoded.
    static func queryEscape(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(.init(charactersIn: "-._~"))) ?? value
    }
}
