import ArgumentParser
import Foundation
import PasswordRules

extension Passkey {
    /// `passkey password`: the saved passwords beside the passkeys (Docs/Passwords.md).
    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save, show, list and delete passwords, share them with approved apps, and generate new ones.",
            discussion: """
                Passwords are kept in the passkey store, each sealed under the store key like a private key; the \
                index beside the store lists the logins (never the passwords), so `password list` needs no \
                passphrase. `generate` makes Safari's classic (`uFA-T9C-aRD-cDP`) or strong passwords, or follows a \
                site's `passwordrules` descriptor. See Docs/Passwords.md.
                """,
            subcommands: [Add.self, Get.self, List.self, Delete.self, Note.self, Request.self, Generate.self])
    }
}

extension Passkey.Password {
    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print new random passwords, one a line.",
            discussion: """
                Without options: one strong password. --rules takes a passwordrules descriptor, for example \
                'required: upper; required: digit; allowed: lower; minlength: 12; maxlength: 16', read as \
                Apple's reference parser reads it; a descriptor with errors is refused, with the rules a browser \
                would fall back to. Randomness comes from the kernel's generator (/dev/urandom).
                """
        )

        @Option(help: ArgumentHelp("classic (xxx-xxx-xxx-xxx) or strong (20 characters).", valueName: "format"))
        var format: PasswordFormat?
        @Option(
            help: ArgumentHelp("A passwordrules descriptor to follow instead of a format.", valueName: "descriptor"))
        var rules: String?
        @Option(help: "How many passwords to print.") var count = 1

        static let largestCount = 100_000_000

        func validate() throws {
            guard format == nil || rules == nil else { throw ValidationError("Give --format or --rules, not both.") }
            guard (1...Self.largestCount).contains(count) else {
                throw ValidationError("--count must be between 1 and \(Self.largestCount).")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            guard var random = BufferedSystemRandom() else { throw CommandFailure("cannot open /dev/urandom") }
            let make = try Self.generator(format: format, rules: rules)
            var batch = ""
            for index in 0..<count {
                batch += try make(&random)
                batch += "\n"
                if batch.utf8.count >= 1 << 16 || index == count - 1 {
                    FileHandle.standardOutput.write(Data(batch.utf8))
                    batch = ""
                }
            }
        }

        /// Makes passwords following `rules` (a passwordrules descriptor) when given, else in `format` (strong by
        /// default); fails at once when no password can follow the rules.
        static func generator(
            format: PasswordFormat?, rules: String?
        ) throws -> (inout BufferedSystemRandom) throws -> String {
            if let rules {
                let plan: PasswordGenerator.Plan
                do { plan = try PasswordGenerator.Plan(try Self.rules(from: rules)) } catch let error
                    as PasswordGenerationError
                {
                    throw CommandFailure("no password can follow these rules: \(error)")
                }
                return { random in
                    do { return try PasswordGenerator.generate(following: plan, using: &random) } catch {
                        throw CommandFailure("no password can follow these rules: \(error)")
                    }
                }
            }
            if format == .classic { return { random in PasswordGenerator.classic(using: &random) } }
            return { random in PasswordGenerator.strong(using: &random) }
        }

        /// The parsed descriptor, or a failure naming each error and what a browser would use instead; a `-`
        /// that the reference skips is only a warning.
        static func rules(from descriptor: String) throws -> PasswordRules {
            let (parsed, diagnostics) = PasswordRules.parse(descriptor)
            let errors = diagnostics.filter(\.dropsSomething)
            if !errors.isEmpty {
                throw CommandFailure(
                    "the password rules have errors: " + errors.map(\.description).joined(separator: "; "),
                    hint: "A browser would read them as: \(parsed)")
            }
            for warning in diagnostics {
                FileHandle.standardError.write(Data("passkey: warning: \(warning)\n".utf8))
            }
            return parsed
        }
    }
}

extension PasswordFormat: ExpressibleByArgument {}
