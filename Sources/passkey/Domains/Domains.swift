import Basics
import ArgumentParser
import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import PasskeyFilesIO
import TerminalIO

extension Passkey {
    struct Domains: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Associated domains: check a site's apple-app-site-association file, sign one, list and "
                + "forget approvals, match universal links, read its passkey endpoints.",
            discussion: """
                check fetches and judges a domain's association file for an app; sign makes the CMS-signed form; \
                list shows the approval table and forget removes an app's approvals; match says whether a link \
                opens the app and which rule decided; endpoints reads where the site lets you create and manage \
                passkeys. See Docs/Domains.md.
                """,
            subcommands: [Check.self, Sign.self, List.self, Forget.self, Match.self, Endpoints.self]
        )
    }
}

extension Passkey.Domains {
    struct Match: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether a universal link opens the app, is excluded, or opens in the browser.",
            discussion: """
                Reads the apple-app-site-association file given with --file, else the file the last `passkey \
                domains check` of the domain fetched (all three applinks forms: the 2015 \
                details dictionary, iOS 9 appID and paths, iOS 13 appIDs and components) and prints the verdict \
                and the rule that decided it. The file is taken to be the one served by --domain (default: the \
                link's host); a link to another host opens in the browser. Exit status: 0 the app opens the \
                link, 1 excluded or browser, 2 bad input (a file that is not a valid association file, a bad app \
                ID). See Docs/Domains.md.
                """
        )

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The app, TEAMID.BUNDLEID.", valueName: "id")) var app: String
        @Option(
            help: ArgumentHelp("The association file (- for standard input).", valueName: "file"), completion: .file())
        var file: String?
        @Option(
            help: ArgumentHelp(
                "The domain the file came from, host or host:port (default: the link's host).", valueName: "domain"))
        var domain: String?
        @OptionGroup var format: JSONOption
        @Argument(help: ArgumentHelp("The https link.", valueName: "url")) var url: String

        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            let appID: AppID
            do { appID = try AppID(app) } catch { throw CommandFailure(error.message, exitCode: 2) }
            let bytes: [UInt8]
            let source: String
            if let file {
                bytes = try DomainFiles.read(file, limit: AppSiteAssociation.maximumBytes, what: "association file")
                source = file
            } else {
                (bytes, source) = try lastCheckedFile()
            }
            let association: AppSiteAssociation
            do { association = try AppSiteAssociation(json: bytes) } catch {
                throw CommandFailure("\(source) is not a valid association file: \(error.message)", exitCode: 2)
            }
            let verdict = association.match(url: url, app: appID, domain: domain)
            if format.json {
                printJSON(JSONOutput.text(DomainLines.linkJSON(verdict)))
            } else {
                DomainLines.link(verdict).forEach { printLine($0) }
            }
            if verdict.outcome != .open { throw ExitCode(1) }
        }

        /// The file the last `domains check` of --domain (default: the link's host and port) fetched, from the
        /// approval table beside the store.
        func lastCheckedFile() throws -> ([UInt8], String) {
            guard let key = ApprovalTable.fileDomain(given: domain, link: url) else {
                throw CommandFailure("\(url.terminalSafe) is not a URL", exitCode: 2)
            }
            let table: ApprovalTable
            do {
                table = try ApprovalTableFile(url: store.files.domainApprovals).load()
            } catch {
                throw CommandFailure("cannot read the approval table: \(error)", exitCode: 2)
            }
            guard let bytes = table.lastFile(domain: key) else {
                throw CommandFailure(
                    "no association file from \(key): it has not been checked, or its last check found no file",
                    hint: "Run `passkey domains check \(key) --app ID`, or give the file with --file PATH.",
                    exitCode: 2)
            }
            return (bytes, "the file last fetched from \(key)")
        }
    }
}

enum DomainFiles {
    static func read(_ path: String, limit: Int, what: String) throws -> [UInt8] {
        do {
            return try CommandInput.readWhole(path, limit: limit, what: what)
        } catch {
            throw CommandFailure(error.description, exitCode: 2)
        }
    }
}

extension AssociatedService: ExpressibleByArgument {}
