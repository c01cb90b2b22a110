import ArgumentParser
import SyncClientCommands

/// `syncapi client …`: the Swift SDK's command line (Clients/SyncClient), for trying a deployment by hand and in
/// scripts; every argument after `client` goes to it as it is.
struct ClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client", abstract: "Use a server as an app would, through the Swift SDK (run `syncapi client help`).")

    @Argument(parsing: .captureForPassthrough, help: "The SDK command and its options.")
    var arguments: [String] = []

    func run() async throws {
        let code = await ClientCommandLine.run(arguments)
        if code != 0 { throw ExitCode(code) }
    }
}
