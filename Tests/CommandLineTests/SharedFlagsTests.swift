import ArgumentParser
import Foundation
import TerminalIO
import Testing

@testable import passkey

/// The flags every command shares (Docs/CommandLine.md, "Shared flags"), read from the command tree itself: each is
/// one option group, so a command either has the group or has no such flag.
struct SharedFlagsTests {
    /// Every command that runs (has no subcommands), with the words that name it.
    static func leaves(
        _ command: any ParsableCommand.Type = Passkey.self, path: [String] = []
    ) -> [(words: [String], command: any ParsableCommand.Type)] {
        let subcommands = command.configuration.subcommands
        guard !subcommands.isEmpty else { return [(path, command)] }
        return subcommands.flatMap { leaves($0, path: path + [$0._commandName]) }
    }

    /// The first line of each option in the help, its spaces folded.
    static func options(of command: any ParsableCommand.Type) -> [String] {
        let help = command.helpMessage(columns: 500)
        guard let section = help.components(separatedBy: "\nOPTIONS:\n").last else { return [] }
        return section.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
            .filter { $0.hasPrefix("-") }
    }

    @Test func theTreeHasEveryCommand() {
        let names = Set(Self.leaves().map { $0.words.joined(separator: " ") })
        #expect(names.count >= 45)
        for name in ["scan", "import", "export", "links list", "client links remove", "client get", "config"] {
            #expect(names.contains(name), "\(name)")
        }
    }

    @Test(arguments: leaves().map { $0.words.joined(separator: " ") })
    func everyCommandHasQuietAndVerboseWithOneMeaning(_ name: String) throws {
        let command = try #require(Self.leaves().first { $0.words.joined(separator: " ") == name }?.command)
        let options = Self.options(of: command)
        #expect(
            options.contains("-q, --quiet Print only the result and errors (no progress or notes)."), "\(options)")
        #expect(
            options.contains(
                "-v, --verbose Print details, and after an error line its underlying cause (also PASSKEY_VERBOSE=1)."),
            "\(options)")
        // --json, --yes and --store, where a command has them, are the shared groups' (`lock --store` names the one
        // store whose key the agent forgets).
        let shared = [
            "--json": "--json Print one JSON document on standard output instead of text.",
            "--yes": "--yes Approve every request without asking. For tests and CI only; the output says so.",
            "--store": "--store <path> The passkey store file (default: $PASSKEY_STORE, else the settings file's "
                + "store, else $XDG_DATA_HOME/passkey/passkeys.sqlite).",
        ]
        for (flag, line) in shared where !(flag == "--store" && name == "lock") {
            let named = options.filter { $0 == flag || $0.hasPrefix(flag + " ") }
            #expect(named.allSatisfy { $0 == line } && named.count <= 1, "\(name): \(named)")
        }
    }

    @Test func everyCommandThatReportsSomethingHasJSON() {
        let reporting = [
            "scan", "import", "export", "list", "info", "config", "links list", "client links list", "client create",
            "client get", "client register", "client sign-in", "password list", "domains check", "domains list",
            "domains match", "inspect qr", "inspect advert", "inspect domain", "inspect origin", "inspect banner",
            "share", "receive", "import-key new", "otp add", "otp code", "otp list",
        ]
        for (words, command) in Self.leaves() where reporting.contains(words.joined(separator: " ")) {
            #expect(Self.options(of: command).contains { $0.hasPrefix("--json ") }, "\(words)")
        }
    }

    /// The commands that ask before they act take `--yes` (Docs/CommandLine.md): `import` had a copy of its own,
    /// and `client register`/`sign-in`, which use only a phone (the phone asks), take none.
    @Test func everyCommandThatAsksHasTheSharedYes() {
        let asking = [
            "scan", "serve", "listen", "delete", "import", "share", "receive", "client create", "client get",
            "password add", "password delete", "password request", "otp delete",
        ]
        let yes = "--yes Approve every request without asking. For tests and CI only; the output says so."
        for (words, command) in Self.leaves() {
            let has = Self.options(of: command).contains(yes)
            #expect(has == asking.contains(words.joined(separator: " ")), "\(words)")
        }
    }

    @Test func quietAndVerboseSetOneLevel() throws {
        #expect(try OutputOptions.parse(["-q"]).level == .quiet)
        #expect(try OutputOptions.parse(["--verbose"]).level.showsDetails)
        #expect(throws: (any Error).self) { try OutputOptions.parse(["-q", "-v"]) }
        // The level reaches `Passkey.main()` through the parsed command.
        let parsed = try Passkey.parseAsRoot(["list", "-q", "--json"])
        #expect(OutputOptions.of(parsed)?.level == .quiet)
    }
}
