import ArgumentParser

@main
struct Passkey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey",
        abstract: "A software passkey authenticator for the terminal.",
        discussion: """
            Passkeys are kept in an encrypted SQLite store. `passkey serve` exposes them as a CTAP2
            authenticator; `list`, `delete` and `info` manage them.
            """,
        version: "0.1.0",
        subcommands: [
            Serve.self, Scan.self, Client.self, RP.self, List.self, Delete.self, Info.self, Demo.self, Inspect.self,
            Debug.self,
        ]
    )
}
