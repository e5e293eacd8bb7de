import ArgumentParser
import Foundation
import JSON
import PublicSuffix
import TerminalIO
import WebAuthnClient
import WebAuthnClientIO

extension Passkey.Inspect {
    struct Origin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check an origin and RP ID as a browser does before it asks any authenticator.",
            discussion: """
                The origin must be https (http only on localhost and *.localhost) with a domain, not an IP address; \
                the RP ID, by default the origin's host, must be the host or a registrable domain suffix of it \
                under the Public Suffix List (both sections, as browsers use it). With --related-origins, an RP ID \
                that fails that check is looked up at https://RPID/.well-known/webauthn (WebAuthn L3 §5.11). \
                The list is read from $PASSKEY_PUBLIC_SUFFIX_LIST, else \(PublicSuffixListFile.systemPath) \
                (Debian's publicsuffix package). Exit status: 0 valid, 1 not valid, 2 bad input (a URL that does \
                not parse, no list). See Docs/Client.md.
                """
        )

        @Option(
            name: .customLong("rp-id"),
            help: ArgumentHelp("The RP ID to check (default: the origin's host).", valueName: "id"))
        var rpID: String?
        @Flag(
            name: .customLong("related-origins"),
            help: "When the suffix check fails, fetch the RP ID's related origins.")
        var relatedOrigins = false
        @Option(
            name: .customLong("related-origins-ca"),
            help: ArgumentHelp("A PEM file of CAs to trust for the fetch, besides the system's.", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"]))
        var relatedOriginsCA: String?
        @Option(
            name: .customLong("related-origins-port"),
            help: ArgumentHelp("The port to fetch from, for tests (default 443).", visibility: .hidden))
        var relatedOriginsPort = 443
        @Option(
            help: ArgumentHelp(
                "Check each 'origin<TAB>rpId' line of a file (- for standard input), one JSON line each.",
                valueName: "file", visibility: .hidden), completion: .file())
        var batch: String?
        @OptionGroup var format: JSONOption
        @Argument(help: ArgumentHelp("The origin, or any URL of it.", valueName: "url")) var url: String?

        func validate() throws {
            guard (url == nil) != (batch == nil) else {
                throw ValidationError("Give exactly one of a URL and --batch.")
            }
            if batch != nil {
                guard rpID == nil, !relatedOrigins, !format.json else {
                    throw ValidationError(
                        "--batch takes each RP ID from its lines and prints JSON; it fetches nothing.")
                }
            }
            guard relatedOriginsCA == nil || relatedOrigins else {
                throw ValidationError("--related-origins-ca needs --related-origins.")
            }
            guard (1...65_535).contains(relatedOriginsPort) else {
                throw ValidationError("--related-origins-port must be 1–65535.")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let list: PublicSuffixList
            do {
                list = try PublicSuffixListFile.load()
            } catch {
                throw Self.badInput(error.description)
            }
            if let batch {
                try Self.runBatch(path: batch, list: list)
                return
            }
            let origin: WebOrigin
            do {
                origin = try WebOrigin(url: url ?? "")
            } catch {
                throw Self.badInput("\(String((url ?? "").prefix(200)).debugDescription) is not a URL: \(error)")
            }
            let verdict: RelyingPartyIDVerdict
            if relatedOrigins {
                let source = HTTPSRelatedOriginsSource(additionalCAFile: relatedOriginsCA, port: relatedOriginsPort)
                verdict = await RelyingPartyIDCheck.evaluate(
                    origin: origin, rpID: rpID, list: list, relatedOrigins: source)
            } else {
                verdict = RelyingPartyIDCheck.evaluate(origin: origin, rpID: rpID, list: list)
            }
            if format.json {
                printJSON(JSONOutput.text(OriginCheckLines.json(verdict)))
            } else {
                OriginCheckLines.text(verdict).forEach { printLine($0) }
            }
            if !verdict.valid { throw ExitCode(1) }
        }

        /// Prints `passkey: …` and exits 2: the question could not be asked.
        static func badInput(_ message: String) -> CommandFailure {
            CommandFailure(message, exitCode: 2)
        }

        /// One verdict a line for each `origin<TAB>rpId` line: a line without a tab has no RP ID (the default is
        /// checked); an empty line is skipped. A URL that does not parse gets `"rule": "badURL"`.
        static func runBatch(path: String, list: PublicSuffixList) throws {
            let data: Data
            do {
                data =
                    try path == "-"
                    ? FileHandle.standardInput.readToEnd() ?? Data() : Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw badInput("cannot read \(path): \(error.localizedDescription)")
            }
            var output = Data()
            for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                guard let verdict = OriginCheckLines.batch(line: line, list: list) else { continue }
                output.append(contentsOf: verdict.serialized() + [UInt8(ascii: "\n")])
                if output.count > 1 << 20 {
                    FileHandle.standardOutput.write(output)
                    output.removeAll(keepingCapacity: true)
                }
            }
            FileHandle.standardOutput.write(output)
        }
    }
}
