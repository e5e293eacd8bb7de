import ArgumentParser
import AssociatedDomains
import Foundation

extension Passkey {
    struct Domains: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Associated domains: check a site's apple-app-site-association file, sign one, list and "
                + "forget approvals, match universal links.",
            discussion: """
                check fetches and judges a domain's association file for an app; sign makes the CMS-signed form; \
                list shows the approval table and forget removes an app's approvals; match says whether a link \
                opens the app and which rule decided. See Docs/Domains.md.
                """,
            subcommands: [Match.self]
        )
    }
}

extension Passkey.Domains {
    struct Match: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether a universal link opens the app, is excluded, or opens in the browser.",
            discussion: """
                Reads the apple-app-site-association file given with --file (all three applinks forms: the 2015 \
                details dictionary, iOS 9 appID and paths, iOS 13 appIDs and components) and prints the verdict \
                and the rule that decided it. The file is taken to be the one served by --domain (default: the \
                link's host); a link to another host opens in the browser. Exit status: 0 the app opens the \
                link, 1 excluded or browser, 2 bad input (a file that is not a valid association file, a bad app \
                ID). See Docs/Domains.md.
                """
        )

        @Option(help: ArgumentHelp("The app, TEAMID.BUNDLEID.", valueName: "id")) var app: String
        @Option(help: ArgumentHelp("The association file (- for standard input).", valueName: "file"))
        var file: String?
        @Option(
            help: ArgumentHelp(
                "The domain the file came from, host or host:port (default: the link's host).", valueName: "domain"))
        var domain: String?
        @Flag(help: "Print one JSON object.") var json = false
        @Argument(help: ArgumentHelp("The https link.", valueName: "url")) var url: String

        func run() throws {
            let appID: AppID
            do { appID = try AppID(app) } catch { throw CommandFailure(error.message, exitCode: 2) }
            guard let file else {
                throw CommandFailure(
                    "no association file: the file from the last `passkey domains check` is not available yet",
                    hint: "Give the file with --file PATH (save it with: curl -o aasa.json "
                        + "https://DOMAIN/.well-known/apple-app-site-association).",
                    exitCode: 2)
            }
            let bytes = try DomainFiles.read(file, limit: AppSiteAssociation.maximumBytes, what: "association file")
            let association: AppSiteAssociation
            do { association = try AppSiteAssociation(json: bytes) } catch {
                throw CommandFailure("\(file) is not a valid association file: \(error.message)", exitCode: 2)
            }
            let verdict = association.match(url: url, app: appID, domain: domain)
            if json {
                print(try DomainFiles.jsonText(Self.object(verdict)))
            } else {
                print("verdict  \(verdict.outcome.rawValue)")
                print("reason   \(verdict.reason.terminalSafe)")
                if let rule = verdict.rule {
                    print("rule     \(rule.location.terminalSafe)  \(rule.pattern.terminalSafe)")
                    print("form     \(rule.form.rawValue) (\(rule.form))")
                }
            }
            if verdict.outcome != .open { throw ExitCode(1) }
        }

        /// `verdict`, `reason`, `form` (`2015`, `ios9`, `ios13`, or null when no rule decided) and `rule`
        /// (`location`, `detail`, `index`, `pattern`, or null).
        static func object(_ verdict: LinkVerdict) -> [String: Any] {
            var object: [String: Any] = [
                "verdict": verdict.outcome.rawValue, "reason": verdict.reason, "form": NSNull(), "rule": NSNull(),
            ]
            if let rule = verdict.rule {
                object["form"] = rule.form.rawValue
                object["rule"] = [
                    "location": rule.location, "detail": rule.detail, "index": rule.index, "pattern": rule.pattern,
                ]
            }
            return object
        }
    }
}

/// Reading the files `domains` and `inspect banner` take, and printing their JSON.
enum DomainFiles {
    /// The bytes of `path` (`-` for standard input), refused past `limit` bytes; failures exit 2.
    static func read(_ path: String, limit: Int, what: String) throws -> [UInt8] {
        let handle: FileHandle
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            guard let opened = FileHandle(forReadingAtPath: path) else {
                throw CommandFailure("cannot read the \(what) \(path)", exitCode: 2)
            }
            handle = opened
        }
        defer { if path != "-" { try? handle.close() } }
        var bytes: [UInt8] = []
        while bytes.count <= limit {
            guard let chunk = try? handle.read(upToCount: 64 * 1024), !chunk.isEmpty else { break }
            bytes += chunk
        }
        guard bytes.count <= limit else {
            throw CommandFailure("the \(what) \(path) is larger than \(limit) bytes", exitCode: 2)
        }
        return bytes
    }

    static func jsonText(_ object: [String: Any]) throws -> String {
        let data = try JSONSerialization.data(
            withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
