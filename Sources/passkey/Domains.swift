import ArgumentParser
import AssociatedDomains

extension Passkey {
    struct Domains: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Associated domains: check a site's apple-app-site-association for an app, sign the file.",
            discussion: """
                `check` fetches a domain's file as the platform does and records the answer in an approval table \
                beside the store (`list`, `forget`); `sign` makes the CMS-signed form of a file. See Docs/Domains.md.
                """,
            subcommands: [Check.self, Sign.self, List.self, Forget.self]
        )
    }
}

extension AssociatedService: ExpressibleByArgument {}
