import type { FileTypeRecord } from '@rampart/contracts';

// The file types accepted in file reports (spec 4.1: the list is the only accepted set). Names
// are the MIME types that `file --mime-type` (libmagic) or the IANA registry give for samples
// seen in incident response; `alternatives` are other names in use for the same format, listed
// for readers and not accepted as `file_type` (one type, one name, so feeds filter reliably).

const IANA = (type: string) => ({ title: `IANA media type ${type}`, url: `https://www.iana.org/assignments/media-types/${type}` });
const MDN_COMMON = { title: 'MDN: Common media types', url: 'https://developer.mozilla.org/en-US/docs/Web/HTTP/Guides/MIME_types/Common_types' };
const PE_FORMAT = { title: 'Microsoft: PE Format', url: 'https://learn.microsoft.com/en-us/windows/win32/debug/pe-format' };
const ELF_SPEC = { title: 'Tool Interface Standard: ELF specification', url: 'https://refspecs.linuxfoundation.org/elf/elf.pdf' };
const OOXML = { title: 'ECMA-376 Office Open XML', url: 'https://ecma-international.org/publications-and-standards/standards/ecma-376/' };
const MS_CFB = { title: 'Microsoft: [MS-CFB] Compound File Binary Format', url: 'https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-cfb/53989ce4-7b05-4f8d-829b-d08d6148375b' };
const MITRE_SCRIPTING = { title: 'MITRE ATT&CK T1059: Command and Scripting Interpreter', url: 'https://attack.mitre.org/techniques/T1059/' };
const MITRE_PHISHING = { title: 'MITRE ATT&CK T1566.001: Spearphishing Attachment', url: 'https://attack.mitre.org/techniques/T1566/001/' };
const MITRE_ARCHIVE = { title: 'MITRE ATT&CK T1027.015: Compression', url: 'https://attack.mitre.org/techniques/T1027/015/' };

type Entry = Omit<FileTypeRecord, 'alternatives'> & { alternatives?: string[] };

const ENTRIES: Entry[] = [
  // Executables and installers
  { name: 'application/vnd.microsoft.portable-executable', description: 'Windows Portable Executable: programs, libraries, drivers and screen savers.<br>The most reported malware format.', types: ['exe', 'dll', 'sys', 'scr', 'cpl', 'ocx', 'efi'], alternatives: ['application/x-dosexec', 'application/x-msdownload', 'application/x-msdos-program'], furtherReading: [IANA('application/vnd.microsoft.portable-executable'), PE_FORMAT] },
  { name: 'application/x-executable', description: 'ELF executable for Linux and other Unix systems.', types: ['elf', 'out', 'axf'], alternatives: ['application/x-elf'], furtherReading: [ELF_SPEC] },
  { name: 'application/x-sharedlib', description: 'ELF shared object or position-independent executable.', types: ['so'], alternatives: ['application/x-pie-executable'], furtherReading: [ELF_SPEC] },
  { name: 'application/x-mach-binary', description: 'Mach-O executable or library for macOS and iOS.', types: ['macho', 'dylib', 'bundle'], alternatives: ['application/x-mach-o-executable'], furtherReading: [{ title: 'Mach-O file format reference (copy of Apple\'s retired document)', url: 'https://github.com/aidansteele/osx-abi-macho-file-format-reference' }] },
  { name: 'application/java-archive', description: 'Java archive: compiled classes in a ZIP container.', types: ['jar', 'war', 'ear'], alternatives: ['application/x-java-archive'], furtherReading: [IANA('application/java-archive'), { title: 'Oracle: JAR File Specification', url: 'https://docs.oracle.com/en/java/javase/21/docs/specs/jar/jar.html' }] },
  { name: 'application/java-vm', description: 'Compiled Java class file.', types: ['class'], alternatives: ['application/x-java-class'], furtherReading: [{ title: 'The Java Virtual Machine Specification: The class File Format', url: 'https://docs.oracle.com/javase/specs/jvms/se21/html/jvms-4.html' }] },
  { name: 'application/vnd.android.package-archive', description: 'Android application package.', types: ['apk'], furtherReading: [IANA('application/vnd.android.package-archive')] },
  { name: 'application/x-msi', description: 'Windows Installer package (a Compound File Binary container).', types: ['msi', 'msp'], alternatives: ['application/x-ole-storage'], furtherReading: [MS_CFB, { title: 'Microsoft: Windows Installer', url: 'https://learn.microsoft.com/en-us/windows/win32/msi/windows-installer-portal' }] },
  { name: 'application/x-ms-shortcut', description: 'Windows shell link (shortcut), often used to launch a hidden command.', types: ['lnk'], furtherReading: [{ title: 'Microsoft: [MS-SHLLINK] Shell Link Binary File Format', url: 'https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-shllink/16cb4ca1-9339-4d0c-a68d-bf1d6cc0f943' }] },
  { name: 'application/vnd.debian.binary-package', description: 'Debian software package.', types: ['deb', 'udeb'], alternatives: ['application/x-debian-package'], furtherReading: [IANA('application/vnd.debian.binary-package')] },
  { name: 'application/x-rpm', description: 'RPM software package.', types: ['rpm'], alternatives: ['application/x-redhat-package-manager'], furtherReading: [{ title: 'RPM: package file format', url: 'https://rpm-software-management.github.io/rpm/manual/format.html' }] },
  { name: 'application/x-apple-diskimage', description: 'Apple disk image, a common macOS malware carrier.', types: ['dmg'], furtherReading: [MDN_COMMON] },
  { name: 'application/x-iso9660-image', description: 'ISO 9660 optical disc image; used to deliver payloads past mark-of-the-web checks.', types: ['iso', 'img'], furtherReading: [{ title: 'MITRE ATT&CK T1553.005: Mark-of-the-Web Bypass', url: 'https://attack.mitre.org/techniques/T1553/005/' }] },
  { name: 'application/wasm', description: 'WebAssembly binary module.', types: ['wasm'], furtherReading: [IANA('application/wasm')] },
  // Scripts
  { name: 'text/x-shellscript', description: 'Unix shell script.', types: ['sh', 'bash', 'zsh'], alternatives: ['application/x-sh', 'application/x-shellscript'], furtherReading: [MITRE_SCRIPTING] },
  { name: 'application/x-msdos-batch', description: 'Windows batch script.', types: ['bat', 'cmd'], alternatives: ['text/x-msdos-batch', 'application/bat'], furtherReading: [MITRE_SCRIPTING] },
  { name: 'text/x-powershell', description: 'PowerShell script or module.', types: ['ps1', 'psm1', 'psd1'], alternatives: ['application/x-powershell'], furtherReading: [{ title: 'MITRE ATT&CK T1059.001: PowerShell', url: 'https://attack.mitre.org/techniques/T1059/001/' }] },
  { name: 'text/vbscript', description: 'Visual Basic Script.', types: ['vbs', 'vbe'], alternatives: ['application/x-vbscript'], furtherReading: [{ title: 'MITRE ATT&CK T1059.005: Visual Basic', url: 'https://attack.mitre.org/techniques/T1059/005/' }] },
  { name: 'text/javascript', description: 'JavaScript or JScript source; run by browsers, Node.js or Windows Script Host.', types: ['js', 'mjs', 'cjs', 'jse'], alternatives: ['application/javascript', 'application/x-javascript'], furtherReading: [IANA('text/javascript'), { title: 'MITRE ATT&CK T1059.007: JavaScript', url: 'https://attack.mitre.org/techniques/T1059/007/' }] },
  { name: 'application/hta', description: 'HTML Application, run by mshta.exe with full user rights.', types: ['hta'], furtherReading: [{ title: 'MITRE ATT&CK T1218.005: Mshta', url: 'https://attack.mitre.org/techniques/T1218/005/' }] },
  { name: 'text/x-python', description: 'Python source.', types: ['py', 'pyw'], alternatives: ['text/x-script.python', 'application/x-python-code'], furtherReading: [{ title: 'MITRE ATT&CK T1059.006: Python', url: 'https://attack.mitre.org/techniques/T1059/006/' }] },
  { name: 'text/x-perl', description: 'Perl source.', types: ['pl', 'pm'], alternatives: ['application/x-perl'], furtherReading: [MITRE_SCRIPTING] },
  { name: 'application/x-php', description: 'PHP source; the usual form of a web shell.', types: ['php', 'phtml', 'php5'], alternatives: ['text/x-php'], furtherReading: [{ title: 'MITRE ATT&CK T1505.003: Web Shell', url: 'https://attack.mitre.org/techniques/T1505/003/' }] },
  // Documents
  { name: 'application/pdf', description: 'Portable Document Format.', types: ['pdf'], alternatives: ['application/x-pdf'], furtherReading: [IANA('application/pdf'), MITRE_PHISHING] },
  { name: 'application/msword', description: 'Microsoft Word 97-2003 document (Compound File Binary); may carry VBA macros.', types: ['doc', 'dot'], furtherReading: [IANA('application/msword'), MS_CFB] },
  { name: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', description: 'Microsoft Word document (Office Open XML).', types: ['docx', 'dotx'], furtherReading: [IANA('application/vnd.openxmlformats-officedocument.wordprocessingml.document'), OOXML] },
  { name: 'application/vnd.ms-word.document.macroEnabled.12', description: 'Microsoft Word macro-enabled document.', types: ['docm', 'dotm'], furtherReading: [IANA('application/vnd.ms-word.document.macroEnabled.12'), OOXML] },
  { name: 'application/vnd.ms-excel', description: 'Microsoft Excel 97-2003 workbook; may carry VBA or Excel 4.0 macros.', types: ['xls', 'xlt', 'xla'], furtherReading: [IANA('application/vnd.ms-excel'), MS_CFB] },
  { name: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', description: 'Microsoft Excel workbook (Office Open XML).', types: ['xlsx', 'xltx'], furtherReading: [IANA('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'), OOXML] },
  { name: 'application/vnd.ms-excel.sheet.macroEnabled.12', description: 'Microsoft Excel macro-enabled workbook.', types: ['xlsm', 'xltm'], furtherReading: [IANA('application/vnd.ms-excel.sheet.macroEnabled.12'), OOXML] },
  { name: 'application/vnd.ms-powerpoint', description: 'Microsoft PowerPoint 97-2003 presentation.', types: ['ppt', 'pps', 'pot'], furtherReading: [IANA('application/vnd.ms-powerpoint'), MS_CFB] },
  { name: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', description: 'Microsoft PowerPoint presentation (Office Open XML).', types: ['pptx', 'ppsx'], furtherReading: [IANA('application/vnd.openxmlformats-officedocument.presentationml.presentation'), OOXML] },
  { name: 'application/rtf', description: 'Rich Text Format; a carrier of embedded OLE exploits.', types: ['rtf'], alternatives: ['text/rtf'], furtherReading: [IANA('application/rtf')] },
  { name: 'application/vnd.oasis.opendocument.text', description: 'OpenDocument text document.', types: ['odt'], furtherReading: [IANA('application/vnd.oasis.opendocument.text')] },
  { name: 'application/onenote', description: 'Microsoft OneNote section; used to embed scripts behind images.', types: ['one'], furtherReading: [IANA('application/onenote'), MITRE_PHISHING] },
  { name: 'application/vnd.ms-outlook', description: 'Microsoft Outlook message.', types: ['msg'], furtherReading: [IANA('application/vnd.ms-outlook')] },
  { name: 'message/rfc822', description: 'Internet e-mail message.', types: ['eml', 'mht', 'mhtml'], furtherReading: [IANA('message/rfc822'), MITRE_PHISHING] },
  { name: 'text/html', description: 'HTML page; used for phishing pages and HTML smuggling.', types: ['html', 'htm', 'xhtml'], furtherReading: [IANA('text/html'), { title: 'MITRE ATT&CK T1027.006: HTML Smuggling', url: 'https://attack.mitre.org/techniques/T1027/006/' }] },
  { name: 'image/svg+xml', description: 'Scalable Vector Graphics; may embed script.', types: ['svg', 'svgz'], furtherReading: [IANA('image/svg+xml')] },
  // Archives
  { name: 'application/zip', description: 'ZIP archive.', types: ['zip', 'zipx'], alternatives: ['application/x-zip-compressed'], furtherReading: [IANA('application/zip'), MITRE_ARCHIVE] },
  { name: 'application/vnd.rar', description: 'RAR archive.', types: ['rar'], alternatives: ['application/x-rar-compressed', 'application/x-rar'], furtherReading: [IANA('application/vnd.rar'), MITRE_ARCHIVE] },
  { name: 'application/x-7z-compressed', description: '7-Zip archive.', types: ['7z'], furtherReading: [MDN_COMMON, MITRE_ARCHIVE] },
  { name: 'application/gzip', description: 'gzip compressed data.', types: ['gz', 'tgz'], alternatives: ['application/x-gzip'], furtherReading: [IANA('application/gzip')] },
  { name: 'application/x-tar', description: 'tar archive.', types: ['tar'], furtherReading: [MDN_COMMON] },
  { name: 'application/x-bzip2', description: 'bzip2 compressed data.', types: ['bz2', 'tbz2'], furtherReading: [MDN_COMMON] },
  { name: 'application/x-xz', description: 'xz compressed data.', types: ['xz', 'txz'], furtherReading: [{ title: 'The .xz file format', url: 'https://tukaani.org/xz/xz-file-format.txt' }] },
  { name: 'application/vnd.ms-cab-compressed', description: 'Microsoft Cabinet archive.', types: ['cab'], furtherReading: [IANA('application/vnd.ms-cab-compressed')] },
  // Images
  { name: 'image/png', description: 'PNG image; may hide payloads (steganography).', types: ['png'], furtherReading: [IANA('image/png'), { title: 'MITRE ATT&CK T1027.003: Steganography', url: 'https://attack.mitre.org/techniques/T1027/003/' }] },
  { name: 'image/jpeg', description: 'JPEG image.', types: ['jpg', 'jpeg', 'jpe'], furtherReading: [IANA('image/jpeg')] },
  { name: 'image/gif', description: 'GIF image.', types: ['gif'], furtherReading: [IANA('image/gif')] },
  { name: 'image/bmp', description: 'Windows bitmap image.', types: ['bmp', 'dib'], alternatives: ['image/x-ms-bmp'], furtherReading: [IANA('image/bmp')] },
  { name: 'image/vnd.microsoft.icon', description: 'Windows icon.', types: ['ico', 'cur'], alternatives: ['image/x-icon'], furtherReading: [IANA('image/vnd.microsoft.icon')] },
  { name: 'image/webp', description: 'WebP image.', types: ['webp'], furtherReading: [IANA('image/webp')] },
  // Anything else
  { name: 'text/plain', description: 'Plain text (configuration, lists, notes left by ransomware).', types: ['txt', 'log', 'ini', 'cfg'], furtherReading: [IANA('text/plain')] },
  { name: 'application/octet-stream', description: 'Binary data of no recognized format.<br>Use it when no other type applies.', types: ['bin', 'dat'], furtherReading: [IANA('application/octet-stream')] },
];

/** Every accepted file type, in catalog order (the `GET /file_types` body). */
export const FILE_TYPE_CATALOG: readonly FileTypeRecord[] = Object.freeze(ENTRIES.map((e) => Object.freeze({ ...e, alternatives: e.alternatives ?? [] })));

const BY_NAME = new Map(FILE_TYPE_CATALOG.map((entry) => [entry.name.toLowerCase(), entry.name]));

/**
 * The catalog's own spelling of a MIME type (media types compare case-insensitively), or
 * undefined when the type is not in the catalog.
 */
export function catalogFileType(mime: string): string | undefined {
  return BY_NAME.get(mime.trim().toLowerCase());
}
