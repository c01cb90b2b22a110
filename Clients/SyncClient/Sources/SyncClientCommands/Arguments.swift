import Foundation
import SyncClient

/// The command line split by hand: `--name value` options, `--flag` flags and positional arguments.
struct Arguments {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []
    static let flagNames: Set<String> = ["json", "discard", "erase-failed", "help", "insecure"]

    init(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                positional += arguments[(index + 1)...]
                break
            }
            if argument.hasPrefix("--"), argument.count > 2 {
                var name = String(argument.dropFirst(2))
                if let equals = name.firstIndex(of: "=") {
                    options[String(name[..<equals])] = String(name[name.index(after: equals)...])
                    name = ""
                } else if Self.flagNames.contains(name) {
                    flags.insert(name)
                } else {
                    guard index + 1 < arguments.count else { throw SyncClientError.invalid("--\(name) needs a value") }
                    options[name] = arguments[index + 1]
                    index += 1
                }
            } else {
                positional.append(argument)
            }
            index += 1
        }
    }

    var json: Bool { flags.contains("json") }
    var parent: String? { options["parent"] }

    func option(_ name: String) throws -> String {
        guard let value = options[name] else { throw SyncClientError.invalid("--\(name) is required") }
        return value
    }

    /// The password of `signup` and `login`: `SYNCAPI_PASSWORD`, else one line of standard input; never an argument,
    /// which `ps` and shell history show to other users.
    func password(
        environment: [String: String] = ProcessInfo.processInfo.environment, readLine: () -> String? = { Swift.readLine() }
    )
        throws -> String
    {
        guard options["password"] == nil else {
            throw SyncClientError.invalid("--password is not accepted: set SYNCAPI_PASSWORD or write it on standard input")
        }
        if let password = environment["SYNCAPI_PASSWORD"], !password.isEmpty { return password }
        guard let line = readLine(), !line.isEmpty else {
            throw SyncClientError.invalid("no password: set SYNCAPI_PASSWORD or write it on standard input")
        }
        return line
    }

    /// The ID token of `login --id-token-file FILE` (`-`: standard input), trimmed: a file rather than an argument,
    /// for the same reason as the password.
    func idToken(readLine: () -> String? = { Swift.readLine() }) throws -> String {
        let path = try option("id-token-file")
        let text: String?
        if path == "-" {
            text = readLine()
        } else {
            guard let data = FileManager.default.contents(atPath: path) else { throw SyncClientError.invalid("cannot read \(path)") }
            text = String(decoding: data, as: UTF8.self)
        }
        guard let token = text?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
            throw SyncClientError.invalid("no ID token in \(path)")
        }
        return token
    }

    func positional(_ index: Int) throws -> String {
        guard index < positional.count else { throw SyncClientError.invalid("missing argument (see `syncapi client help`)") }
        return positional[index]
    }

    func collection(_ index: Int) throws -> SyncCollection {
        // Any collection of the server's model: the SDK checks the name against the model when it writes.
        SyncCollection(try positional(index))
    }

    func configuration() throws -> SyncClientConfiguration {
        guard let server = URL(string: try option("server")), server.scheme == "http" || server.scheme == "https" else {
            throw SyncClientError.invalid("--server is not an http(s) URL")
        }
        var configuration = SyncClientConfiguration(serverURL: server, replicaPath: try option("replica"))
        // `--insecure`: http:// to another host (a test deployment on a private network).
        configuration.allowsInsecureHTTP = flags.contains("insecure")
        configuration.space = options["space"]
        return configuration
    }
}
