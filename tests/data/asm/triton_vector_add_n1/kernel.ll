; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"
target datalayout = "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

; Function Attrs: nounwind
define ptx_kernel void @add_kernel(ptr addrspace(1) %0, ptr addrspace(1) %1, ptr addrspace(1) %2, ptr addrspace(1) readnone captures(none) %3, ptr addrspace(1) readnone captures(none) %4) local_unnamed_addr #0 !dbg !4 {
  %6 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x(), !dbg !7
  %7 = shl i32 %6, 10, !dbg !8
  %8 = tail call i32 @llvm.nvvm.read.ptx.sreg.tid.x(), !dbg !9
  %9 = shl nuw nsw i32 %8, 2, !dbg !9
  %10 = and i32 %9, 508, !dbg !9
  %11 = or disjoint i32 %10, %7, !dbg !10
  %12 = or disjoint i32 %11, 1, !dbg !10
  %13 = or disjoint i32 %11, 2, !dbg !10
  %14 = or disjoint i32 %11, 3, !dbg !10
  %15 = or disjoint i32 %11, 512, !dbg !10
  %16 = or disjoint i32 %11, 513, !dbg !10
  %17 = or disjoint i32 %11, 514, !dbg !10
  %18 = or disjoint i32 %11, 515, !dbg !10
  %19 = icmp slt i32 %11, 1, !dbg !11
  %20 = icmp slt i32 %7, 0, !dbg !11
  %21 = sext i32 %11 to i64, !dbg !12
  %22 = getelementptr float, ptr addrspace(1) %0, i64 %21, !dbg !12
  %23 = sext i32 %12 to i64, !dbg !12
  %24 = getelementptr float, ptr addrspace(1) %0, i64 %23, !dbg !12
  %25 = sext i32 %13 to i64, !dbg !12
  %26 = getelementptr float, ptr addrspace(1) %0, i64 %25, !dbg !12
  %27 = sext i32 %14 to i64, !dbg !12
  %28 = getelementptr float, ptr addrspace(1) %0, i64 %27, !dbg !12
  %29 = sext i32 %15 to i64, !dbg !12
  %30 = getelementptr float, ptr addrspace(1) %0, i64 %29, !dbg !12
  %31 = sext i32 %16 to i64, !dbg !12
  %32 = getelementptr float, ptr addrspace(1) %0, i64 %31, !dbg !12
  %33 = sext i32 %17 to i64, !dbg !12
  %34 = getelementptr float, ptr addrspace(1) %0, i64 %33, !dbg !12
  %35 = sext i32 %18 to i64, !dbg !12
  %36 = getelementptr float, ptr addrspace(1) %0, i64 %35, !dbg !12
  %37 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %22, i1 %19) #2, !dbg !13
  %38 = bitcast i32 %37 to float, !dbg !13
  %39 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %24, i1 %20) #2, !dbg !13
  %40 = bitcast i32 %39 to float, !dbg !13
  %41 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %26, i1 %20) #2, !dbg !13
  %42 = bitcast i32 %41 to float, !dbg !13
  %43 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %28, i1 %20) #2, !dbg !13
  %44 = bitcast i32 %43 to float, !dbg !13
  %45 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %30, i1 %20) #2, !dbg !13
  %46 = bitcast i32 %45 to float, !dbg !13
  %47 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %32, i1 %20) #2, !dbg !13
  %48 = bitcast i32 %47 to float, !dbg !13
  %49 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %34, i1 %20) #2, !dbg !13
  %50 = bitcast i32 %49 to float, !dbg !13
  %51 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %36, i1 %20) #2, !dbg !13
  %52 = bitcast i32 %51 to float, !dbg !13
  %53 = getelementptr float, ptr addrspace(1) %1, i64 %21, !dbg !14
  %54 = getelementptr float, ptr addrspace(1) %1, i64 %23, !dbg !14
  %55 = getelementptr float, ptr addrspace(1) %1, i64 %25, !dbg !14
  %56 = getelementptr float, ptr addrspace(1) %1, i64 %27, !dbg !14
  %57 = getelementptr float, ptr addrspace(1) %1, i64 %29, !dbg !14
  %58 = getelementptr float, ptr addrspace(1) %1, i64 %31, !dbg !14
  %59 = getelementptr float, ptr addrspace(1) %1, i64 %33, !dbg !14
  %60 = getelementptr float, ptr addrspace(1) %1, i64 %35, !dbg !14
  %61 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %53, i1 %19) #2, !dbg !15
  %62 = bitcast i32 %61 to float, !dbg !15
  %63 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %54, i1 %20) #2, !dbg !15
  %64 = bitcast i32 %63 to float, !dbg !15
  %65 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %55, i1 %20) #2, !dbg !15
  %66 = bitcast i32 %65 to float, !dbg !15
  %67 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %56, i1 %20) #2, !dbg !15
  %68 = bitcast i32 %67 to float, !dbg !15
  %69 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %57, i1 %20) #2, !dbg !15
  %70 = bitcast i32 %69 to float, !dbg !15
  %71 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %58, i1 %20) #2, !dbg !15
  %72 = bitcast i32 %71 to float, !dbg !15
  %73 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %59, i1 %20) #2, !dbg !15
  %74 = bitcast i32 %73 to float, !dbg !15
  %75 = tail call i32 asm sideeffect "mov.u32 $0, 0x0;\0A\09@$2 ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l,b"(ptr addrspace(1) %60, i1 %20) #2, !dbg !15
  %76 = bitcast i32 %75 to float, !dbg !15
  %77 = getelementptr float, ptr addrspace(1) %2, i64 %21, !dbg !16
  %78 = getelementptr float, ptr addrspace(1) %2, i64 %23, !dbg !16
  %79 = getelementptr float, ptr addrspace(1) %2, i64 %25, !dbg !16
  %80 = getelementptr float, ptr addrspace(1) %2, i64 %27, !dbg !16
  %81 = getelementptr float, ptr addrspace(1) %2, i64 %29, !dbg !16
  %82 = getelementptr float, ptr addrspace(1) %2, i64 %31, !dbg !16
  %83 = getelementptr float, ptr addrspace(1) %2, i64 %33, !dbg !16
  %84 = getelementptr float, ptr addrspace(1) %2, i64 %35, !dbg !16
  %85 = fadd float %38, %62, !dbg !17
  %86 = fadd float %40, %64, !dbg !17
  %87 = fadd float %42, %66, !dbg !17
  %88 = fadd float %44, %68, !dbg !17
  %89 = fadd float %46, %70, !dbg !17
  %90 = fadd float %48, %72, !dbg !17
  %91 = fadd float %50, %74, !dbg !17
  %92 = fadd float %52, %76, !dbg !17
  %93 = bitcast float %85 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %93, ptr addrspace(1) %77, i1 %19) #2, !dbg !18
  %94 = bitcast float %86 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %94, ptr addrspace(1) %78, i1 %20) #2, !dbg !18
  %95 = bitcast float %87 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %95, ptr addrspace(1) %79, i1 %20) #2, !dbg !18
  %96 = bitcast float %88 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %96, ptr addrspace(1) %80, i1 %20) #2, !dbg !18
  %97 = bitcast float %89 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %97, ptr addrspace(1) %81, i1 %20) #2, !dbg !18
  %98 = bitcast float %90 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %98, ptr addrspace(1) %82, i1 %20) #2, !dbg !18
  %99 = bitcast float %91 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %99, ptr addrspace(1) %83, i1 %20) #2, !dbg !18
  %100 = bitcast float %92 to i32, !dbg !18
  tail call void asm sideeffect "@$2 st.global.b32 [ $1 + 0 ], { $0 };", "r,l,b"(i32 %100, ptr addrspace(1) %84, i1 %20) #2, !dbg !18
  ret void, !dbg !19
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #1

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x() #1

attributes #0 = { nounwind "nvvm.reqntid"="128" }
attributes #1 = { mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #2 = { nounwind }

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3}

!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !1, producer: "triton", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "vector_add.py", directory: "/tmp/kerneltui-asm-data/task")
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !{i32 4, !"nvvm-reflect-ftz", i32 1}
!4 = distinct !DISubprogram(name: "add_kernel", linkageName: "add_kernel", scope: !1, file: !1, line: 7, type: !5, scopeLine: 7, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!5 = !DISubroutineType(cc: DW_CC_normal, types: !6)
!6 = !{}
!7 = !DILocation(line: 8, column: 24, scope: !4)
!8 = !DILocation(line: 9, column: 17, scope: !4)
!9 = !DILocation(line: 9, column: 38, scope: !4)
!10 = !DILocation(line: 9, column: 25, scope: !4)
!11 = !DILocation(line: 10, column: 18, scope: !4)
!12 = !DILocation(line: 11, column: 24, scope: !4)
!13 = !DILocation(line: 11, column: 16, scope: !4)
!14 = !DILocation(line: 12, column: 24, scope: !4)
!15 = !DILocation(line: 12, column: 16, scope: !4)
!16 = !DILocation(line: 13, column: 23, scope: !4)
!17 = !DILocation(line: 13, column: 33, scope: !4)
!18 = !DILocation(line: 13, column: 29, scope: !4)
!19 = !DILocation(line: 13, column: 4, scope: !4)
