import ArgumentParser
import Foundation
import JSON
import PublicSuffix
import TerminalIO
import WebAuthnClient
import WebAuthnClientIO

extension Passkey.Domains {
    struct Endpoints: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show where a site lets you create and manage passkeys (/.well-known/passkey-endpoints).",
            discussion: """
                Fetches https://DOMAIN/.well-known/passkey-endpoints (W3C, A Well-Known URL for Passkey \
                Endpoints) as the related origins file is fetched: certificate validation, no redirects, \
                application/json, at most 16 KB, 10 s. Prints the enroll and manage URLs it names; each must be an \
                https URL. Exit status 1, with one line saying why, when the site publishes none or a bad one \
                (Docs/Domains.md).
                """)

        @Option(
            help: ArgumentHelp("A PEM file of CAs to trust, besides the system's.", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"]))
        var ca: String?
        @OptionGroup var format: JSONOption
        @Argument(help: ArgumentHelp("The RP ID, with a port when it is not 443.", valueName: "domain[:port]"))
        var domain: String
        @OptionGroup var verbosity: OutputOptions

        /// The domain and the port.
        private var parsed: (DomainName, Int)? {
            var host = Substring(domain)
            var port = 443
            if let colon = domain.lastIndex(of: ":") {
                guard let number = Int(domain[domain.index(after: colon)...]), (1...65535).contains(number) else {
                    return nil
                }
                port = number
                host = domain[..<colon]
            }
            guard let name = try? DomainName(host) else { return nil }
            return (name, port)
        }

        func validate() throws {
            guard parsed != nil else { throw ValidationError("'\(domain)' is not a domain name (with a :port).") }
        }

        func run() async throws {
            guard let (name, port) = parsed else { return }
            let source = HTTPSPasskeyEndpointsSource(additionalCAFile: ca, port: port)
            let endpoints: PasskeyEndpoints
            do {
                endpoints = try await source.endpoints(for: name)
            } catch {
                throw CommandFailure("no passkey endpoints for \(domain): \(error.description)")
            }
            if format.json {
                printJSON(
                    JSONOutput.text(
                        JSONValue.sortedObject([
                            ("rpId", .string("\(name)")), ("url", .string(source.url(for: name))),
                            ("enroll", endpoints.enroll.map(JSONValue.string)),
                            ("manage", endpoints.manage.map(JSONValue.string)),
                        ])))
            } else {
                var lines = ["\(name)"]
                if let enroll = endpoints.enroll { lines.append("  create a passkey  \(enroll)") }
                if let manage = endpoints.manage { lines.append("  manage passkeys   \(manage)") }
                printLine(lines.joined(separator: "\n"))
            }
        }
    }
}
