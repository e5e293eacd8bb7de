import ArgumentParser
import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import PasskeyProvider
import SignedFilesIO
import TerminalIO
import WebAuthnClientIO
import PasskeyFilesIO

extension Passkey.Domains {
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check whether a domain approves an app, as the platform does, and say why.",
            discussion: """
                Fetches https://DOMAIN/.well-known/apple-app-site-association (then /apple-app-site-association \
                when that answers 3xx or 4xx) with certificate validation, no redirects and a 128 KB limit. 200 \
                with a file naming the app for the service: approved. An HTML page, an invalid file, a bad \
                signature, no such app, a redirect or a 4xx: denied. A 5xx or no answer is tried again with a \
                growing wait, then the state is pending. A signed file (application/pkcs7-mime, or DER) must be \
                signed by a certificate valid for DOMAIN that chains to the system's trust store or --ca. The \
                answer is recorded in the approval table beside the store (`passkey domains list`). Exit status: \
                0 approved, 1 denied, 3 pending, 2 bad input. See Docs/Domains.md.
                """
        )

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The app: TEAMID.BUNDLEID.", valueName: "id")) var app: String
        @Option(help: ArgumentHelp("The service to check.", valueName: "service"))
        var service: AssociatedService = .webcredentials
        @Option(
            help: ArgumentHelp(
                "A PEM file of CAs to trust, besides the system's (for HTTPS and signed files).", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"]))
        var ca: String?
        @OptionGroup var format: JSONOption
        @Option(help: ArgumentHelp("Fetches of a failing URL in all (5xx, no answer).", visibility: .hidden))
        var tries = 3
        @Option(
            name: .customLong("retry-delay"),
            help: ArgumentHelp("Seconds before the second try; each later wait doubles.", visibility: .hidden))
        var retryDelay = 2.0
        @Argument(help: ArgumentHelp("The domain, with a port when it is not 443.", valueName: "domain[:port]"))
        var domain: String

        func validate() throws {
            guard (1...10).contains(tries) else { throw ValidationError("--tries must be 1–10.") }
            guard retryDelay >= 0, retryDelay <= 600 else { throw ValidationError("--retry-delay must be 0–600.") }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let (entitlement, appID) = try Self.parse(domain: domain, service: service, app: app)
            let checker = try Self.checker(ca: ca)
            let policy = RetryPolicy(attempts: tries, firstDelay: .milliseconds(Int(retryDelay * 1000)))
            let verdict = await checker.run(
                DomainCheck(
                    host: entitlement.host, port: entitlement.effectivePort, app: appID, service: service,
                    policy: policy))
            let outcome = try ApprovalTableFile(url: store.files.domainApprovals).update {
                try $0.record(verdict, entitlement: entitlement, app: appID, at: Date())
            }
            Self.show(verdict, entitlement: entitlement, app: appID, json: format.json)
            if case .approvalStands(let since) = outcome, !format.json {
                printLine(
                    "The approval from \(since.formatted(.iso8601)) stands: a check that cannot reach the site does not "
                        + "undo it for a week.")
            }
            switch verdict.state {
            case .approved: return
            case .denied: throw ExitCode(1)
            case .pending: throw ExitCode(3)
            }
        }

        /// The entitlement and app from the command line, or exit 2.
        static func parse(domain: String, service: AssociatedService, app: String) throws -> (Entitlement, AppID) {
            do {
                return (try Entitlement(service: service, domain: domain), try AppID(app))
            } catch let error as ApprovalTableError {
                throw CommandFailure(error.description, exitCode: 2)
            } catch let error as AssociationFileError {
                throw CommandFailure(error.message, exitCode: ExitStatus.unanswered)
            } catch {
                throw CommandFailure("\(app) is not an app ID (TEAMID.BUNDLEID)", exitCode: ExitStatus.unanswered)
            }
        }

        /// A checker trusting the system's authorities and `ca`.
        static func checker(ca: String?) throws -> DomainChecker {
            let pem = try ca.map { try ExchangeService.read($0, what: "the CA file") }
            return DomainChecker(
                fetcher: HTTPSFetcher(additionalCAFile: ca), trust: TrustAnchors(certificatesPEM: pem))
        }

        static func show(_ verdict: CheckVerdict, entitlement: Entitlement, app: AppID, json: Bool) {
            if json {
                printJSON(JSONOutput.text(DomainLines.verdictJSON(verdict, entitlement: entitlement, app: app)))
            } else {
                DomainLines.verdict(verdict).forEach { printLine($0) }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The approval table: each entitlement and app, with the last check's state, time and reason.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var format: JSONOption

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let table = try ApprovalTableFile(url: store.files.domainApprovals).load()
            if format.json {
                printJSON(JSONOutput.text(DomainLines.tableJSON(table)))
            } else {
                DomainLines.table(table).forEach { printLine($0) }
            }
        }
    }

    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget an app's entries, as uninstalling it does, or with --all the whole table.")

        @OptionGroup var store: StoreOptions
        @Flag(help: "Forget every entry and file: starts an empty table, also in place of one that cannot be read.")
        var all = false
        @Argument(help: ArgumentHelp("The app: TEAMID.BUNDLEID.", valueName: "id")) var app: String?

        func validate() throws {
            guard all != (app != nil) else { throw ValidationError("Name an app, or give --all.") }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let file = ApprovalTableFile(url: store.files.domainApprovals)
            guard let app else {
                try file.reset()
                printLine("Forgot every entry: the approval table is empty.")
                return
            }
            let appID: AppID
            do {
                appID = try AppID(app)
            } catch {
                throw CommandFailure(error.message, exitCode: ExitStatus.unanswered)
            }
            let removed = try file.update { $0.forget(app: appID) }
            printLine("Forgot \(removed.count) \(removed.count == 1 ? "entry" : "entries") for \(appID).")
        }
    }
}
