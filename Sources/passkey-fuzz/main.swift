// passkey-fuzz: the fuzz targets of FuzzTargets behind one executable.
//
//   passkey-fuzz --list                 one target name a line
//   passkey-fuzz seeds DIR              writes every target's seeds to DIR/<target>/
//   passkey-fuzz TARGET [ARGUMENT…]     built by Tools/fuzz (libFuzzer linked in): libFuzzer with these arguments;
//                                       an ordinary build: replays each file, or each file in each directory, once
import CFuzzerDriver
import Crypto
import Foundation
import FuzzTargets

/// The target libFuzzer's callback runs, read once: the first argument names it, or, in the processes libFuzzer
/// starts itself (`-merge=1`, `-fork=N`, `-minimize_crash=1`), which get only libFuzzer's arguments,
/// `PASSKEY_FUZZ_TARGET`, which the first process sets.
enum Selected {
    static let environmentVariable = "PASSKEY_FUZZ_TARGET"
    static let namedByArgument = CommandLine.arguments.dropFirst().first.flatMap(FuzzTargets.named)
    static let target: FuzzTarget? =
        namedByArgument ?? ProcessInfo.processInfo.environment[environmentVariable].flatMap(FuzzTargets.named)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("passkey-fuzz: \(message)\n".utf8))
    exit(2)
}

/// The names' column: as wide as the longest name and a space.
let nameWidth = (FuzzTargets.all.map(\.name.count).max() ?? 0) + 1

let usage = """
    usage: passkey-fuzz --list | seeds DIR | TARGET [ARGUMENT…]
    targets:
    \(FuzzTargets.all.map { "  \($0.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0))\($0.summary)" }.joined(separator: "\n"))
    """

/// Writes each seed as `seed-<first 8 bytes of its SHA-256 in hex>`, the way libFuzzer names corpus files.
func writeSeeds(to directory: URL) throws {
    for target in FuzzTargets.all {
        let folder = directory.appendingPathComponent(target.name, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for seed in target.seeds() {
            let name = "seed-" + SHA256.hash(data: seed).prefix(8).map { String(format: "%02x", $0) }.joined()
            try Data(seed).write(to: folder.appendingPathComponent(name))
        }
        print("\(target.name): \(target.seeds().count) seeds")
    }
}

/// Runs every file named, or every file in every directory named, through `target` once.
func replay(_ target: FuzzTarget, paths: [String]) {
    var files: [String] = []
    for path in paths {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            fail("no such file: \(path)")
        }
        if isDirectory.boolValue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            files += names.sorted().map { (path as NSString).appendingPathComponent($0) }
        } else {
            files.append(path)
        }
    }
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { fail("cannot read \(file)") }
        target.run(Array(data))
    }
    print("\(target.name): replayed \(files.count) inputs, no invariant broken")
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "--list":
    for target in FuzzTargets.all { print(target.name) }
case "--help", "-h", nil:
    print(usage)
case "seeds":
    guard arguments.count == 2 else { fail("seeds takes one directory\n\(usage)") }
    do {
        try writeSeeds(to: URL(fileURLWithPath: arguments[1], isDirectory: true))
    } catch {
        fail("cannot write seeds: \(error)")
    }
default:
    guard let target = Selected.target else { fail("no target called \(arguments[0])\n\(usage)") }
    let rest = Selected.namedByArgument == nil ? arguments : Array(arguments.dropFirst())
    guard passkey_fuzzer_is_linked() != 0 else {
        replay(target, paths: rest)
        exit(0)
    }
    setenv(Selected.environmentVariable, target.name, 1)
    // libFuzzer reads its own options and corpus directories from argv: the program name and what follows the
    // target name. The strings live until exit.
    var argv: [UnsafeMutablePointer<CChar>?] = ([CommandLine.arguments[0]] + rest).map { strdup($0) }
    argv.append(nil)
    var argc = CInt(argv.count - 1)
    let status = argv.withUnsafeMutableBufferPointer { buffer -> CInt in
        var pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
        return passkey_fuzzer_run(&argc, &pointer) { data, size in
            let input = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
            Selected.target?.run(input)
            return 0
        }
    }
    exit(status)
}
