import ArgumentParser
import AssociatedDomains
import Foundation

extension Passkey.Inspect {
    struct Banner: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read a page's Smart App Banner tag (<meta name=\"apple-itunes-app\">).",
            discussion: """
                Give an HTML file, or - for standard input. Prints app-id, app-argument and affiliate-data from \
                the first apple-itunes-app tag, and any other keys (which Safari ignores). Exit status: 0 a \
                banner with a numeric app-id, 1 no banner or an invalid one, 2 a file that cannot be read. See \
                Docs/Domains.md.
                """
        )

        @Flag(help: "Print one JSON object.") var json = false
        @Argument(help: ArgumentHelp("The HTML page (- for standard input).", valueName: "file")) var file: String

        func run() throws {
            let html = try DomainFiles.read(file, limit: SmartAppBanner.maximumBytes, what: "page")
            let banner: SmartAppBanner
            do { banner = try SmartAppBanner(html: html) } catch {
                throw CommandFailure(error.message, exitCode: 1)
            }
            if json {
                print(
                    try DomainFiles.jsonText([
                        "appId": banner.appID, "appArgument": banner.appArgument ?? NSNull(),
                        "affiliateData": banner.affiliateData ?? NSNull(), "unknownKeys": banner.unknownKeys,
                        "tags": banner.tagCount,
                    ]))
                return
            }
            print("app-id          \(banner.appID)")
            print("app-argument    \(banner.appArgument?.terminalSafe ?? "absent")")
            print("affiliate-data  \(banner.affiliateData?.terminalSafe ?? "absent")")
            if !banner.unknownKeys.isEmpty {
                print("ignored keys    \(banner.unknownKeys.map(\.terminalSafe).joined(separator: ", "))")
            }
            if banner.tagCount > 1 {
                print("note            the page has \(banner.tagCount) apple-itunes-app tags; only the first counts")
            }
        }
    }
}
