#if canImport(os)
import Logging
import os

/// A swift-log handler that writes to Apple's unified log (Console, `log stream`): subsystem `dev.syncapi.client`,
/// one category per logger label (`SyncClientLog`). An app that has no logging of its own bootstraps it once, before
/// it makes its client: `LoggingSystem.bootstrap { UnifiedLogHandler(label: $0) }`.
public struct UnifiedLogHandler: LogHandler {
    public var logLevel: Logging.Logger.Level = .info
    public var metadata: Logging.Logger.Metadata = [:]
    public var metadataProvider: Logging.Logger.MetadataProvider?
    /// The category of the unified log's entries.
    public let label: String

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logging.Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let given = event.metadata { all.merge(given) { _, new in new } }
        let text = ([event.message.description] + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        // The SDK's messages hold no secret and no item content (`SyncClientLog`): public, so Console shows them.
        os.Logger(subsystem: "dev.syncapi.client", category: label).log(level: Self.type(of: event.level), "\(text, privacy: .public)")
    }

    static func type(of level: Logging.Logger.Level) -> OSLogType {
        switch level {
        case .trace, .debug: .debug
        case .info, .notice: .info
        case .warning, .error: .error
        case .critical: .fault
        }
    }
}
#endif
