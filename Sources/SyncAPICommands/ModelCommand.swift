import ArgumentParser
import Foundation
import SyncAPI
import SyncModelTools

/// `syncapi model`: the data model file's tools (protocol §12), with no database.
struct ModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "model", abstract: "Check or print a data model file (protocol §12); no database needed.",
        subcommands: [Check.self, Normalize.self, OpenAPI.self, Swift.self, TypeScript.self, ErrorCodes.self])

    /// `syncapi model check FILE`: exits 1 with one line naming the collection and the field when the server could
    /// not serve the model.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a model file; print its name, collections and digest.")
        @Argument(help: "The model file (JSON); without it, the default model.") var file: String?

        func run() throws {
            let model = try ModelCommand.load(file)
            print(
                "ok: model \(model.name), \(model.collections.count) collections (\(model.collections.map(\.name).joined(separator: ", "))), digest \(model.digest)"
            )
        }
    }

    /// `syncapi model normalize FILE`: the normalized model, as `GET /api/v1/model` answers it.
    struct Normalize: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a model file normalized (implied values filled, keys sorted, digest).")
        @Argument(help: "The model file (JSON); without it, the default model.") var file: String?

        func run() throws {
            print(JSONWriter.encode(try ModelCommand.load(file).normalized))
        }
    }

    /// `syncapi model openapi FILE`: the OpenAPI document of a model, as `GET /api/v1/openapi.json` answers it.
    struct OpenAPI: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "openapi",
            abstract: "Print the OpenAPI document of a model (JSON, or YAML with --yaml).",
            discussion: "docs/api/openapi.yaml is `syncapi model openapi --yaml --examples docs/api/examples` of the default model.")
        @Argument(help: "The model file (JSON); without it, the default model.") var file: String?
        @Flag(help: "Write YAML instead of JSON.") var yaml = false
        @Option(help: "A folder of golden scenarios (*.json): listed as examples and linked from the answers they show.")
        var examples: String?

        func run() throws {
            let model = try ModelCommand.load(file)
            var scenarios: [(name: String, scenario: JSONValue)] = []
            if let examples {
                do {
                    scenarios = try DataModel.scenarios(inFolder: examples)
                } catch {
                    fail("\(error)")
                }
            }
            let document = model.openAPI(version: SyncAPIVersion.string, examples: scenarios)
            if yaml {
                print(YAMLWriter.encode(document), terminator: "")
            } else {
                print(JSONWriter.encode(document))
            }
        }
    }

    /// `syncapi model swift FILE`: Codable Swift types of a model's collections, for an app (commit the output).
    struct Swift: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "swift", abstract: "Print Swift types (Codable, Identifiable, Sendable) for a model's collections.")
        @Argument(help: "The model file (JSON); without it, the default model.") var file: String?
        @Option(help: "A collection's type name, as collection=Type (repeatable); default: its name, capitalized, without a final s.")
        var type: [String] = []
        @Option(name: .customLong("protocol"), help: "A protocol every type also conforms to (repeatable), e.g. the SDK's SyncModel.")
        var protocols: [String] = []
        @Flag(help: "For an app with the Swift SDK: the types are SyncModels; adds SyncCollection constants and the model as a ServerModel.")
        var sdk = false
        @Flag(name: .customLong("in-sdk"), help: "As --sdk, for a file inside the SDK's own module (no import of it).")
        var inSDK = false

        func run() throws {
            let names = try ModelCommand.typeNames(type)
            let target: DataModel.SwiftTarget = inSDK ? .inSDK : sdk ? .sdk : .plain
            print(try ModelCommand.load(file).swiftSource(typeNames: names, protocols: protocols, target: target), terminator: "")
        }
    }

    /// `syncapi model typescript FILE`: TypeScript types of a model's collections, for an app with the TypeScript
    /// client (commit the output).
    struct TypeScript: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "typescript", abstract: "Print TypeScript types for a model's collections, for the TypeScript client.")
        @Argument(help: "The model file (JSON); without it, the default model.") var file: String?
        @Option(help: "A collection's type name, as collection=Type (repeatable); default: its name, capitalized, without a final s.")
        var type: [String] = []

        func run() throws {
            let names = try ModelCommand.typeNames(type)
            print(try ModelCommand.load(file).typeScriptSource(typeNames: names), terminator: "")
        }
    }

    /// `syncapi model error-codes`: the Swift SDK's `ServerErrorCode` (the error codes of protocol §7).
    struct ErrorCodes: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "error-codes", abstract: "Print the Swift SDK's ServerErrorCode type: the error codes of protocol §7.")

        func run() throws {
            print(ServerErrorCodeSource.render(), terminator: "")
        }
    }

    /// The `--type collection=Type` options of the code generators, as a map.
    static func typeNames(_ pairs: [String]) throws -> [String: String] {
        var names: [String: String] = [:]
        for pair in pairs {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw ValidationError("--type takes collection=Type, not \(pair)") }
            names[parts[0]] = parts[1]
        }
        return names
    }

    static func load(_ file: String?) throws -> DataModel {
        guard let file else { return Collections.model }
        do {
            return try DataModel(contentsOf: file)
        } catch {
            fail("\(file): \(error.description)")
        }
    }
}
