import Hummingbird
import NIOCore
import SyncAPI

/// `GET /changes` (protocol §9): a server-sent event stream that says `change` with the new date of sync as soon as
/// the family's data moves past the client's date, and `: ping` comments in between.
///
/// The stream polls the family's counter in the shared database, so a write taken by any instance reaches every
/// connected client within one poll interval.
struct ChangesRoutes {
    let engine: SyncEngine
    let configuration: AppConfiguration

    func add(to group: RouterGroup<AppRequestContext>) {
        let poll = configuration.changesPollInterval
        let ping = configuration.changesPingInterval
        let maxDuration = configuration.changesMaxDuration
        group.resource(
            "changes",
            [
                .get: { request, context in
                    let session = try context.requireSession()
                    let query = try SyncQuery(request, allowed: ["date"])
                    let start = try await engine.changesSince(query.values["date"], session)
                    // The first check runs before answering, so that an unreachable database is a 503, not a dead stream.
                    let first = try await engine.currentPosition(session)
                    let body = ResponseBody { writer in
                        let clock = ContinuousClock()
                        let end = clock.now + maxDuration
                        var lastWrite = clock.now
                        var since = start
                        var current: (date: String, version: Int64)? = first
                        while clock.now < end, !Task.isCancelled {
                            let position: (date: String, version: Int64)
                            if let known = current {
                                position = known
                                current = nil
                            } else {
                                position = try await engine.currentPosition(session)
                            }
                            if since.map({ position.version > $0 }) ?? true {
                                try await writer.write(ByteBuffer(string: "event: change\ndata: {\"date\":\"\(position.date)\"}\n\n"))
                                since = position.version
                                lastWrite = clock.now
                            } else if clock.now - lastWrite >= ping {
                                try await writer.write(ByteBuffer(string: ": ping\n\n"))
                                lastWrite = clock.now
                            }
                            try await Task.sleep(for: poll)
                        }
                        try await writer.finish(nil)
                    }
                    return Response(
                        status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
                }
            ])
    }
}
