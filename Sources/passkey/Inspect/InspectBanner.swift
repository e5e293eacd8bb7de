import Basics
import ArgumentParser
import AssociatedDomains
import Foundation
import TerminalIO
import WebAuthnClient
import WebAuthnClientIO

extension Passkey.Inspect {
    struct Banner: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read a page's Smart App Banner tag (<meta name=\"apple-itunes-app\">).",
            discussion: """
                Give an HTML file, - for standard input, or an https:// URL (fetched with certificate \
                validation and no redirects; --ca trusts a further CA, for a local test server). Prints app-id, app-argument and affiliate-data from \
                the first apple-itunes-app tag, and any other keys (which Safari ignores). Exit status: 0 a \
                banner with a numeric app-id, 1 no banner or an invalid one, 2 a file that cannot be read. See \
                Docs/Domains.md.
                """
        )

        @OptionGroup var format: JSONOption
        @Argument(
            help: ArgumentHelp("The HTML page: a file, - for standard input, or an https:// URL.", valueName: "page"),
            completion: .file(extensions: ["html", "htm"]))
        var file: String
        @Option(
            help: ArgumentHelp("A PEM file of a further CA to trust for an https:// page.", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"]))
        var ca: String?

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let html =
                file.lowercased().hasPrefix("https://")
                ? try await Self.fetch(file, ca: ca)
                : try DomainFiles.read(file, limit: SmartAppBanner.maximumBytes, what: "page")
            let banner: SmartAppBanner
            do { banner = try SmartAppBanner(html: html) } catch {
                throw CommandFailure(error.message, exitCode: 1)
            }
            if format.json {
                printJSON(JSONOutput.text(DomainLines.bannerJSON(banner)))
            } else {
                DomainLines.banner(banner).forEach { printLine($0) }
            }
        }

        /// The page at `url` (a 200's body, at most the banner reader's limit); any other answer is exit status 2.
        static func fetch(_ url: String, ca: String?) async throws -> [UInt8] {
            let response: WellKnownResponse
            do {
                response = try await HTTPSFetcher(additionalCAFile: ca).get(
                    url, accept: "text/html", userAgent: "passkey (smart app banner)",
                    limit: SmartAppBanner.maximumBytes)
            } catch {
                throw CommandFailure("cannot fetch \(url.terminalSafe): \(error)", exitCode: 2)
            }
            guard response.status == 200 else {
                throw CommandFailure("\(url.terminalSafe) answered \(response.status), not a page", exitCode: 2)
            }
            return response.body
        }
    }
}
